package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/render"
)

// VersionInfo is what `version` prints: the plugin, the Istio it models, and the istiods
// found in the cluster.
type VersionInfo struct {
	Plugin PluginVersion `json:"plugin"`
	// Models is the Istio whose behaviour the engines reproduce.
	Models ModelledIstio `json:"models"`
	// Istiod are the istiod Deployments of the cluster; omitted with --client, -f, or when
	// none could be read.
	Istiod []Istiod `json:"istiod,omitempty"`
	// Warnings: istiods of another version than the modelled one, or why none was read.
	Warnings []string `json:"warnings,omitempty"`
}

// PluginVersion is the build of kubectl mesh-explain.
type PluginVersion struct {
	Version   string `json:"version"`
	Commit    string `json:"commit,omitempty"`
	GoVersion string `json:"goVersion"`
	Platform  string `json:"platform"`
}

// ModelledIstio is the Istio version the engines model.
type ModelledIstio struct {
	// Istio is the minor version, e.g. 1.31.
	Istio string `json:"istio"`
	// Module is the istio.io/istio module version the conformance suite runs.
	Module string `json:"module"`
}

// Istiod is one istiod Deployment of the cluster.
type Istiod struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Revision is its istio.io/rev label ("default" when it has none).
	Revision string `json:"revision"`
	// Image is the discovery container's image.
	Image string `json:"image"`
	// Version is the image tag without variant suffixes (1.31.2 of 1.31.2-distroless), or ""
	// when the tag is not a version (latest, a digest).
	Version string `json:"version,omitempty"`
}

// IstiodLister lists the istiod Deployments of a namespace.
type IstiodLister func(ctx context.Context, namespace string) ([]Istiod, error)

// istiodSelector selects istiod's Deployments (the istiod chart labels them app=istiod).
const istiodSelector = "app=istiod"

// listIstiods is the IstiodLister of the cluster: one list of Deployments by label in the
// namespace, bounded by lookupTimeout.
func (o *CommonOptions) listIstiods(ctx context.Context, namespace string) ([]Istiod, error) {
	cs, err := o.lookupClient()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, lookupTimeout)
	defer cancel()
	l, err := cs.AppsV1().Deployments(namespace).List(ctx, metav1.ListOptions{LabelSelector: istiodSelector})
	if err != nil {
		return nil, err
	}
	var out []Istiod
	for _, d := range l.Items {
		i := Istiod{Namespace: d.Namespace, Name: d.Name, Revision: d.Labels["istio.io/rev"]}
		if i.Revision == "" {
			i.Revision = "default"
		}
		cs := d.Spec.Template.Spec.Containers
		for _, c := range cs {
			if c.Name == "discovery" || len(cs) == 1 {
				i.Image = c.Image
			}
		}
		i.Version = imageVersion(i.Image)
		out = append(out, i)
	}
	slices.SortFunc(out, func(a, b Istiod) int { return strings.Compare(a.Revision+"/"+a.Name, b.Revision+"/"+b.Name) })
	return out, nil
}

// imageVersion returns the version in an image's tag: docker.io/istio/pilot:1.31.2-distroless
// is 1.31.2. A tag that does not start with a digit (latest), or no tag, gives "".
func imageVersion(image string) string {
	image, _, _ = strings.Cut(image, "@")
	i := strings.LastIndex(image, ":")
	if i < 0 || strings.Contains(image[i:], "/") {
		return ""
	}
	tag := image[i+1:]
	for _, variant := range []string{"-distroless", "-debug"} {
		tag = strings.TrimSuffix(tag, variant)
	}
	if tag == "" || tag[0] < '0' || tag[0] > '9' {
		return ""
	}
	return tag
}

// sameMinor reports whether version (1.31.2, 1.31-dev, 1.31.0-beta.1) is of the minor
// version minor (1.31).
func sameMinor(version, minor string) bool {
	return version == minor || strings.HasPrefix(version, minor+".") || strings.HasPrefix(version, minor+"-")
}

// mismatch returns the warnings for istiods whose version is not the modelled one; those
// whose version cannot be told from their image are not reported.
func mismatch(istiods []Istiod) []string {
	var out []string
	for _, i := range istiods {
		if i.Version != "" && !sameMinor(i.Version, IstioVersion) {
			out = append(out, fmt.Sprintf("istiod %s/%s (revision %s) runs Istio %s; this build models Istio %s: "+
				"where their behaviour differs, the explanation may not match what it pushes", i.Namespace, i.Name, i.Revision, i.Version, IstioVersion))
		}
	}
	return out
}

// VersionOptions are the inputs of `version`.
type VersionOptions struct {
	*CommonOptions
	// Output is -o: "" (text), json or yaml.
	Output string
	// Client is --client: do not read the cluster.
	Client bool
}

// NewCmdVersion returns the `version` command.
func NewCmdVersion(common *CommonOptions) *cobra.Command {
	o := &VersionOptions{CommonOptions: common}
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the plugin's version, the Istio version it models, and the istiod versions in the cluster",
		Long: longDesc(`
			Print the version and commit of kubectl mesh-explain, the Istio version whose behaviour
			its engines model, and the istiod Deployments of the cluster (--istio-namespace,
			labelled app=istiod) with their revision (istio.io/rev) and the version in their image
			tag. An istiod of another minor version than the modelled one gets a warning: its
			behaviour may differ. cluster and authz print the same warning when they read a cluster.

			The cluster is read with one list of Deployments; with --client or -f it is not read,
			and when it cannot be read the reason is a warning and the exit code stays 0.`),
		Example: examples(`
			# Plugin, modelled Istio, and the istiods of the cluster
			kubectl mesh-explain version

			# Only the plugin, as JSON
			kubectl mesh-explain version --client -o json`),
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usageErrorf(cmd, "version takes no arguments, got %d", len(args))
			}
			return nil
		},
		ValidArgsFunction: cobra.NoFileCompletions,
		RunE: func(cmd *cobra.Command, _ []string) error {
			switch o.Output {
			case "", "json", "yaml":
			default:
				return usageErrorf(cmd, "unknown output format %q (allowed formats: json, yaml)", o.Output)
			}
			return o.Run(cmd.Context())
		},
	}
	cmd.Flags().StringVarP(&o.Output, "output", "o", o.Output, "Output format: json|yaml (default: text)")
	cmd.Flags().BoolVar(&o.Client, "client", o.Client, "Print only the plugin's and the modelled Istio's versions; do not read the cluster")
	return cmd
}

// Run prints the versions.
func (o *VersionOptions) Run(ctx context.Context) error {
	info := VersionInfo{
		Plugin: PluginVersion{Version: buildVersion(), Commit: buildCommit(), GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH},
		Models: ModelledIstio{Istio: IstioVersion, Module: "istio.io/istio@" + IstioModuleVersion},
	}
	// live: the istiods were read (a failure is a warning, and no istiod line).
	live := !o.Client && !o.FilesOnly()
	if live {
		istiods, err := o.istiodLister()(ctx, o.IstioNamespace)
		switch {
		case err != nil:
			live = false
			info.Warnings = append(info.Warnings, fmt.Sprintf("cannot list the istiod Deployments in %s: %v", o.IstioNamespace, err))
		case len(istiods) == 0:
			info.Warnings = append(info.Warnings, fmt.Sprintf("no istiod Deployment (%s) in namespace %s", istiodSelector, o.IstioNamespace))
		default:
			info.Istiod = istiods
			info.Warnings = append(info.Warnings, mismatch(istiods)...)
		}
	}
	for _, w := range info.Warnings {
		fmt.Fprintf(o.ErrOut, "warning: %s\n", render.Safe(w))
	}
	switch o.Output {
	case "json":
		b, err := json.MarshalIndent(info, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(o.Out, "%s\n", b)
		return err
	case "yaml":
		b, err := yaml.Marshal(info)
		if err != nil {
			return err
		}
		_, err = o.Out.Write(b)
		return err
	}
	return writeVersionText(o.Out, info, live)
}

func writeVersionText(w io.Writer, info VersionInfo, live bool) error {
	p := info.Plugin
	commit := ""
	if p.Commit != "" {
		commit = ", commit " + p.Commit
	}
	fmt.Fprintf(w, "Plugin version: %s (%s, %s%s)\n", p.Version, p.Platform, p.GoVersion, commit)
	fmt.Fprintf(w, "Models Istio:   %s (%s)\n", info.Models.Istio, info.Models.Module)
	for _, i := range info.Istiod {
		v := i.Version
		if v == "" {
			v = "unknown version"
		}
		fmt.Fprintf(w, "istiod:         %s\n", render.Safe(fmt.Sprintf("%s (revision %s, %s/%s, %s)", v, i.Revision, i.Namespace, i.Name, i.Image)))
	}
	if live && len(info.Istiod) == 0 {
		fmt.Fprintf(w, "istiod:         not found\n")
	}
	return nil
}

// istiodLister returns the lister tests set, else the cluster's.
func (o *CommonOptions) istiodLister() IstiodLister {
	if o.ListIstiods != nil {
		return o.ListIstiods
	}
	return o.listIstiods
}

// withIstiodCheck wraps the RunE of a command that reads the cluster: when it reads live, the
// istiods are listed alongside, and those of another version than the modelled one are
// reported once, as warnings after the command's own output. A list that fails or is
// refused adds nothing; one that panics adds a warning.
func withIstiodCheck(o *CommonOptions, cmd *cobra.Command) {
	run := cmd.RunE
	cmd.RunE = func(c *cobra.Command, args []string) error {
		if o.FilesOnly() {
			return run(c, args)
		}
		var (
			wg       sync.WaitGroup
			warnings []string
		)
		ctx, cancel := context.WithCancel(c.Context())
		defer cancel()
		wg.Go(func() {
			defer func() {
				// A panic on this goroutine would end the process: it is one more warning.
				if r := recover(); r != nil {
					warnings = []string{fmt.Sprintf("the istiod version was not checked: internal error: %v", r)}
				}
			}()
			if istiods, err := o.istiodLister()(ctx, o.IstioNamespace); err == nil {
				if o.Revision != "" {
					istiods = slices.DeleteFunc(istiods, func(i Istiod) bool { return i.Revision != o.Revision })
				}
				warnings = mismatch(istiods)
			}
		})
		err := run(c, args)
		if _, usage := err.(*UsageError); usage {
			cancel()
		}
		wg.Wait()
		for _, w := range warnings {
			fmt.Fprintf(o.ErrOut, "warning: %s\n", render.Safe(w))
		}
		return err
	}
}
