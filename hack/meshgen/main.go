// Command meshgen drives the performance benchmark of kubectl mesh-explain (docs/performance.md):
//
//	meshgen files --out DIR [--scale F]              write a synthetic mesh as YAML files
//	meshgen load --kubeconfig FILE [--scale F]       create the same mesh in an API server
//	meshgen queries [--scale F]                      print the command lines the benchmark explains
//	meshgen bare-reads --kubeconfig FILE -- ARGS...  issue exactly the reads the plugin makes for ARGS
//	meshgen measure --kubeconfig FILE --plugin BIN   time the live, bare and offline runs
//	meshgen report RESULTS...                        print the results as Markdown tables
//	meshgen compare-analyze --istioctl BIN DIR...    check and istioctl analyze on the same files
//
// The mesh is seeded and reproducible (internal/testkit/meshgen); --scale 1 is 10,000 Services
// over 100 namespaces. hack/bench.sh runs the whole benchmark.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/mesh-explain/kubectl-mesh-explain/internal/testkit/meshgen"
	// As in the plugin: the bare-reads client starts its heap as the plugin does, so the ratio
	// of the two compares the work after the start, not how each process starts.
	_ "github.com/mesh-explain/kubectl-mesh-explain/pkg/heaptune"
)

func main() {
	if len(os.Args) < 2 {
		usage()
		os.Exit(2)
	}
	var err error
	args := os.Args[2:]
	switch os.Args[1] {
	case "files":
		err = files(args)
	case "load":
		err = load(args)
	case "queries":
		err = queries(args)
	case "bare-reads":
		err = bareReads(args)
	case "measure":
		err = measure(args)
	case "report":
		err = report(args)
	case "compare-analyze":
		err = compareAnalyzeCmd(args)
	case "noop":
		// The startup cost of this binary, for the measurements' baseline.
	case "-h", "--help", "help":
		usage()
	default:
		fmt.Fprintf(os.Stderr, "meshgen: unknown command %q\n", os.Args[1])
		usage()
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "meshgen %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprint(os.Stderr, `usage: meshgen COMMAND [flags]

commands:
  files       write a synthetic mesh as YAML (or JSON) files under --out
  load        create the same mesh in the API server of --kubeconfig
  queries     print the cluster and authz command lines the benchmark explains
  bare-reads  issue exactly the list and get requests the plugin makes for a command line
  measure     time the plugin live, the bare reads and the plugin offline, side by side
  report      print measure and go test -bench results as Markdown tables
  compare-analyze  run check and istioctl analyze on the same files and tabulate what each finds

Run "meshgen COMMAND -h" for the flags of a command.
`)
}

// sizeFlags are the flags that choose the mesh.
type sizeFlags struct {
	scale float64
	seed  uint64
	sizes meshgen.Sizes
}

func (s *sizeFlags) register(fs *flag.FlagSet) {
	fs.Float64Var(&s.scale, "scale", 1, "size of the mesh; 1 is 10,000 Services over 100 namespaces, the other kinds in proportion")
	fs.Uint64Var(&s.seed, "seed", 1, "random seed; the same seed and sizes give the same mesh")
	fs.IntVar(&s.sizes.Namespaces, "namespaces", 0, "override the number of namespaces")
	fs.IntVar(&s.sizes.Services, "services", 0, "override the number of Services")
	fs.IntVar(&s.sizes.Pods, "pods", 0, "override the number of Pods")
	fs.IntVar(&s.sizes.DestinationRules, "destinationrules", 0, "override the number of DestinationRules")
	fs.IntVar(&s.sizes.VirtualServices, "virtualservices", 0, "override the number of VirtualServices")
	fs.IntVar(&s.sizes.PeerAuthentications, "peerauthentications", 0, "override the number of PeerAuthentications")
	fs.IntVar(&s.sizes.AuthorizationPolicies, "authorizationpolicies", 0, "override the number of AuthorizationPolicies")
	fs.IntVar(&s.sizes.Waypoints, "waypoints", 0, "override the number of waypoints (at most one per ambient namespace; default: one in each)")
	fs.IntVar(&s.sizes.WaypointPolicies, "waypointpolicies", 0, "override the number of AuthorizationPolicies attached to waypoints by targetRefs")
}

func (s *sizeFlags) config() meshgen.Config {
	return meshgen.Config{Seed: s.seed, Sizes: s.sizesAt(s.scale)}
}

// sizesAt is the sizes of scale f with the overrides applied.
func (s *sizeFlags) sizesAt(f float64) meshgen.Sizes {
	out := meshgen.Scaled(f)
	set := func(dst *int, v int) {
		if v > 0 {
			*dst = v
		}
	}
	set(&out.Namespaces, s.sizes.Namespaces)
	set(&out.Services, s.sizes.Services)
	set(&out.Pods, s.sizes.Pods)
	set(&out.DestinationRules, s.sizes.DestinationRules)
	set(&out.VirtualServices, s.sizes.VirtualServices)
	set(&out.PeerAuthentications, s.sizes.PeerAuthentications)
	set(&out.AuthorizationPolicies, s.sizes.AuthorizationPolicies)
	set(&out.WaypointPolicies, s.sizes.WaypointPolicies)
	// One waypoint per ambient namespace unless told otherwise, however many namespaces.
	out.Waypoints = meshgen.AmbientNamespaces(out.Namespaces)
	set(&out.Waypoints, s.sizes.Waypoints)
	return out
}

func files(args []string) error {
	fs := flag.NewFlagSet("files", flag.ContinueOnError)
	var sf sizeFlags
	sf.register(fs)
	out := fs.String("out", "", "directory to write (required)")
	format := fs.String("format", "yaml", "file format: yaml or json")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *out == "" {
		return fmt.Errorf("--out is required")
	}
	start := time.Now()
	m, err := meshgen.Generate(sf.config())
	if err != nil {
		return err
	}
	if err := m.WriteFiles(*out, meshgen.Format(*format)); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "meshgen: wrote %d objects (%s) to %s in %v\n", len(m.Objects()), m.Config.Sizes,
		*out, time.Since(start).Round(time.Millisecond))
	return nil
}

func load(args []string) error {
	fs := flag.NewFlagSet("load", flag.ContinueOnError)
	var sf sizeFlags
	sf.register(fs)
	kubeconfig := fs.String("kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig of the API server to fill")
	since := fs.Float64("since-scale", 0, "the cluster already holds the mesh of this scale (same seed and overrides): create only the objects it lacks")
	workers := fs.Int("workers", 8, "concurrent create requests")
	if err := fs.Parse(args); err != nil {
		return err
	}
	m, err := meshgen.Generate(sf.config())
	if err != nil {
		return err
	}
	objs := m.Objects()
	if *since > 0 {
		prev, err := meshgen.Generate(meshgen.Config{Seed: sf.seed, Sizes: sf.sizesAt(*since)})
		if err != nil {
			return err
		}
		have := map[string]bool{}
		for _, o := range prev.Objects() {
			have[meshgen.Key(o)] = true
		}
		var missing []meshgen.Object
		for _, o := range objs {
			if !have[meshgen.Key(o)] {
				missing = append(missing, o)
			}
		}
		objs = missing
	}
	w, err := newWriter(*kubeconfig)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "meshgen: creating %d objects (mesh: %s) with %d workers\n", len(objs), m.Config.Sizes, *workers)
	return w.loadObjects(context.Background(), objs, *workers)
}

func queries(args []string) error {
	fs := flag.NewFlagSet("queries", flag.ContinueOnError)
	var sf sizeFlags
	sf.register(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := sf.config().Sizes.Validate(); err != nil {
		return err
	}
	q := meshgen.QueriesFor(sf.config())
	fmt.Println("kubectl mesh-explain " + strings.Join(q.ClusterArgs(), " "))
	fmt.Println("kubectl mesh-explain " + strings.Join(q.AuthzArgs(), " "))
	fmt.Println("kubectl mesh-explain " + strings.Join(q.SidecarAuthzArgs(), " "))
	fmt.Println("kubectl mesh-explain " + strings.Join(q.WaypointAuthzArgs(), " "))
	return nil
}
