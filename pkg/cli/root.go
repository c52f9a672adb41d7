package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/term"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	// Authentication plugins (exec, OIDC) for kubeconfigs that use them, as kubectl does.
	_ "k8s.io/client-go/plugin/pkg/client/auth"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/render"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/source"
)

// displayName is how help spells the command: kubectl runs the plugin as `kubectl mesh-explain`.
const displayName = "kubectl mesh-explain"

// CommonOptions are the flags every command shares: where to read the mesh from, and how to
// print.
type CommonOptions struct {
	genericiooptions.IOStreams

	// ConfigFlags are kubectl's connection flags (--kubeconfig, --context, -n, ...).
	ConfigFlags *genericclioptions.ConfigFlags

	// Filenames are -f values: files, directories, or "-" for stdin.
	Filenames []string
	// Recursive is -R: walk directories given with -f recursively.
	Recursive bool
	// Overlay is --overlay: apply the -f objects over the live cluster state.
	Overlay bool
	// progressTo says whether live reads show a progress line on w (isTerminal; tests set it).
	progressTo func(io.Writer) bool
	// ShowDefaults is --show-defaults (cluster, authz): list the fields at Istio's or Envoy's
	// defaults in the table, as -o wide does.
	ShowDefaults bool
	// IstioNamespace is --istio-namespace: where istiod and its mesh ConfigMap live.
	IstioNamespace string
	// Revision is --revision: the istiod revision (mesh ConfigMap istio-<rev>).
	Revision string
	// MeshConfigFile is --meshconfig: a MeshConfig YAML file that replaces the mesh ConfigMap.
	MeshConfigFile string
	// Color is --color.
	Color string
	// AllowPartial is --allow-partial: an answer that lacks something it needed exits 0, not
	// ExitIncomplete.
	AllowPartial bool
	// MaxInputBytes is --max-input-bytes: the largest single input (a quantity such as 256Mi).
	MaxInputBytes string

	// Getenv reads the environment (NO_COLOR); tests replace it.
	Getenv func(string) string

	// ListIstiods lists the istiod Deployments (nil: the cluster's, listIstiods); tests
	// replace it.
	ListIstiods IstiodLister

	// stdin is standard input once read (-f -), for loads that read the files again.
	stdin *stdinCopy
}

// NewCommonOptions returns the defaults.
func NewCommonOptions(streams genericiooptions.IOStreams) *CommonOptions {
	return &CommonOptions{
		IOStreams:      streams,
		ConfigFlags:    genericclioptions.NewConfigFlags(true).WithDeprecatedPasswordFlag().WithWarningPrinter(streams),
		IstioNamespace: "istio-system",
		Color:          string(render.ColorAuto),
		MaxInputBytes:  "256Mi",
		Getenv:         os.Getenv,
		progressTo:     isTerminal,
	}
}

// AddFlags registers the shared flags as persistent flags of the root command.
func (o *CommonOptions) AddFlags(cmd *cobra.Command) {
	fs := cmd.PersistentFlags()
	o.ConfigFlags.AddFlags(fs)
	fs.StringArrayVarP(&o.Filenames, "filename", "f", o.Filenames,
		"Read objects from this file, directory or - (stdin) instead of the cluster; repeatable")
	fs.BoolVarP(&o.Recursive, "recursive", "R", o.Recursive, "Walk directories given with -f recursively")
	fs.BoolVar(&o.Overlay, "overlay", o.Overlay,
		"Apply the -f objects over the live cluster state (what-if) instead of reading files only")
	fs.StringVar(&o.IstioNamespace, "istio-namespace", o.IstioNamespace,
		"Namespace of the Istio control plane and its mesh ConfigMap")
	fs.StringVar(&o.Revision, "revision", o.Revision, "Istio revision whose mesh ConfigMap (istio-<revision>) applies")
	fs.StringVar(&o.MeshConfigFile, "meshconfig", o.MeshConfigFile,
		"MeshConfig YAML file to use instead of the mesh ConfigMap")
	fs.BoolVar(&o.AllowPartial, "allow-partial", o.AllowPartial,
		"Exit 0 when the answer is printed but something it needed could not be read (default: exit 3)")
	fs.StringVar(&o.MaxInputBytes, "max-input-bytes", o.MaxInputBytes,
		"Largest single input read (each -f file, standard input, --meshconfig), in bytes or with a suffix (Ki, Mi, Gi); a larger one stops the command")
	fs.StringVar(&o.Color, "color", o.Color, "Colour the table output: "+strings.Join(render.ColorModes, ", ")+" (auto honours NO_COLOR)")
	for _, name := range []string{"filename", "meshconfig"} {
		_ = cmd.MarkPersistentFlagFilename(name, "yaml", "yml", "json")
	}
}

// FilesOnly reports whether only files are read: -f without --overlay never contacts a cluster.
func (o *CommonOptions) FilesOnly() bool { return len(o.Filenames) > 0 && !o.Overlay }

// Validate checks the shared flags.
func (o *CommonOptions) Validate(cmd *cobra.Command) error {
	if o.Overlay && len(o.Filenames) == 0 {
		return usageErrorf(cmd, "--overlay needs objects to overlay (-f FILE)")
	}
	if _, err := render.ParseColorMode(o.Color); err != nil {
		return usageErrorf(cmd, "%v", err)
	}
	if _, err := o.maxInputBytes(); err != nil {
		return usageErrorf(cmd, "%v", err)
	}
	stdin := 0
	for _, f := range o.Filenames {
		if f == "-" {
			stdin++
		}
	}
	if stdin > 1 {
		return usageErrorf(cmd, "-f - (stdin) can be given only once")
	}
	return nil
}

// maxInputBytes parses --max-input-bytes.
func (o *CommonOptions) maxInputBytes() (int64, error) {
	if o.MaxInputBytes == "" {
		return source.DefaultMaxInputBytes, nil
	}
	q, err := resource.ParseQuantity(o.MaxInputBytes)
	n, ok := q.AsInt64()
	if err != nil || !ok || n <= 0 {
		return 0, fmt.Errorf("invalid --max-input-bytes %q: want a positive number of bytes, such as 1048576 or 256Mi", o.MaxInputBytes)
	}
	return n, nil
}

// Namespace returns -n, else the namespace of the kubeconfig context, else "default". In
// files-only mode the kubeconfig is not read: -n, else "default".
func (o *CommonOptions) Namespace() (string, error) {
	if ns := *o.ConfigFlags.Namespace; ns != "" {
		return ns, nil
	}
	if o.FilesOnly() {
		return "default", nil
	}
	ns, _, err := o.ConfigFlags.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return "", fmt.Errorf("reading the namespace of the kubeconfig context: %w", err)
	}
	if ns == "" {
		ns = "default"
	}
	return ns, nil
}

// renderOptions returns the printer options for Out.
func (o *CommonOptions) renderOptions(formats []string) render.Options {
	mode, _ := render.ParseColorMode(o.Color)
	tty, width := terminal(o.Out)
	if !tty {
		// Piped: COLUMNS, as a shell exports it or a user sets it, else render.DefaultWidth.
		if c, err := strconv.Atoi(o.Getenv("COLUMNS")); err == nil && c > 0 {
			width = c
		}
	}
	return render.Options{
		Color:        mode,
		TTY:          tty,
		NoColor:      o.Getenv("NO_COLOR") != "" || o.Getenv("TERM") == "dumb",
		Width:        width,
		ShowDefaults: o.ShowDefaults,
		Formats:      formats,
	}
}

// terminal reports whether w is a terminal, and its width (render.DefaultWidth when it is not).
func terminal(w io.Writer) (bool, int) {
	f, ok := w.(interface{ Fd() uintptr })
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return false, render.DefaultWidth
	}
	if width, _, err := term.GetSize(int(f.Fd())); err == nil && width > 0 {
		return true, width
	}
	return true, render.DefaultWidth
}

// NewRootCmd builds the `kubectl mesh-explain` command tree.
func NewRootCmd(streams genericiooptions.IOStreams) *cobra.Command {
	return newRootCmd(NewCommonOptions(streams), nil, nil, nil)
}

// newRootCmd builds the tree around o; the run funcs replace the commands' Run in tests.
func newRootCmd(o *CommonOptions, clusterRun func(context.Context, *ClusterOptions) error, authzRun func(context.Context, *AuthzOptions) error, checkRun func(context.Context, *CheckOptions) error) *cobra.Command {
	streams := o.IOStreams
	cmd := &cobra.Command{
		Use:   "kubectl-mesh_explain",
		Short: "Show what istiod pushes to a proxy, and where every field comes from",
		Long: longDesc(`
			Reconstruct what istiod would push to a proxy and show where every field comes from:
			which DestinationRule, PeerAuthentication, AuthorizationPolicy, MeshConfig field or
			built-in default decided it, and what it overrode.

			The mesh is read from the cluster of the current kubeconfig context, from YAML files
			(-f; no cluster is contacted), or from both (-f with --overlay: the files are applied
			over the live state).

			Findings about configuration that silently does not do what it seems to (a
			DestinationRule hidden by exportTo, a subset no route uses) are printed as
			diagnostics; they do not change the exit code of cluster and authz. check
			reports them for a whole namespace, the mesh or a set of files, and fails on
			them (--fail-on).

			Exit codes: 0 explained, 1 not found or failed, 3 explained but incomplete (something
			the answer needed could not be read; --allow-partial exits 0), 64 usage error, 65
			malformed input, 70 internal error; check exits 79 when it finds something at or above
			--fail-on.

			Live reads: each request times out after 30s unless --request-timeout says otherwise.`),
		Example: examples(`
			# The Envoy Clusters a sidecar in bookinfo gets for reviews, with the origin of every field
			kubectl mesh-explain cluster reviews -n bookinfo

			# The same, offline from manifests, as the Envoy JSON istiod would send
			kubectl mesh-explain cluster reviews.bookinfo.svc.cluster.local:9080 -f manifests/ -R -o envoy

			# Who gets into a pod: ztunnel's Authorizations for an ambient pod, the inbound
			# filter chains and RBAC for a sidecar
			kubectl mesh-explain authz pod/productpage-v1-6b746f74dc-2r8hz -n bookinfo

			# What a waypoint serves and the L7 authorization it enforces
			kubectl mesh-explain authz waypoint/waypoint -n bookinfo

			# Every silent failure in a directory of manifests, once per cause (a CI gate)
			kubectl mesh-explain check -f manifests/ -R`),
		Version:       buildVersion(),
		Annotations:   map[string]string{cobra.CommandDisplayNameAnnotation: displayName},
		SilenceErrors: true,
		SilenceUsage:  true,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return unknownCommand(cmd, args[0])
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			cmd.SetOut(streams.Out)
			return cmd.Help()
		},
	}
	cmd.SetIn(streams.In)
	cmd.SetOut(streams.Out)
	cmd.SetErr(streams.ErrOut)
	cmd.Flags().Bool("version", false, "Print the version of "+displayName+" and exit")
	cmd.SetVersionTemplate("{{.DisplayName}} {{.Version}}\n")
	cmd.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return &UsageError{Cmd: c, Err: err}
	})
	o.AddFlags(cmd)
	cmd.AddCommand(NewCmdCluster(o, clusterRun), NewCmdAuthz(o, authzRun), NewCmdCheck(o, checkRun))
	for _, c := range cmd.Commands() {
		withNamespaceHint(o, c)
		withIstiodCheck(o, c)
	}
	cmd.AddCommand(NewCmdVersion(o))
	cmd.PersistentPreRun = func(c *cobra.Command, _ []string) {
		if c.Name() == cobra.ShellCompRequestCmd || c.Name() == cobra.ShellCompNoDescRequestCmd {
			registerCompletions(o, cmd)
		}
	}
	addSuggestions(cmd)
	return cmd
}

// fixedCompletions completes a flag or argument from a fixed list.
func fixedCompletions(values ...string) cobra.CompletionFunc {
	return func(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
		return values, cobra.ShellCompDirectiveNoFileComp
	}
}

// addShowDefaultsFlag adds --show-defaults to a command whose table lists generated fields.
func addShowDefaultsFlag(o *CommonOptions, cmd *cobra.Command) {
	cmd.Flags().BoolVar(&o.ShowDefaults, "show-defaults", false, "List in the table the fields left at Istio's or Envoy's defaults (-o wide always lists them)")
}
