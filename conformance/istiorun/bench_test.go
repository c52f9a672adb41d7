package istiorun

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"

	"istio.io/istio/pilot/pkg/model"
	v3 "istio.io/istio/pilot/pkg/xds/v3"
	"istio.io/istio/pilot/test/xds"

	"github.com/mesh-explain/kubectl-mesh-explain/internal/testkit/meshgen"
)

// The Istio side of docs/performance.md: Istio's own cluster generation for the client proxy
// and the synthetic mesh the engine benchmarks use (internal/testkit/meshgen, same seed and scales,
// through the same YAML files), to set against BenchmarkClusterEveryClusterOfProxy of
// pkg/engine/envoycluster. MESH_EXPLAIN_BENCH_SCALE lists the scales (1 is 10,000 Services).

// benchScenario generates the mesh of one scale, writes it as files and loads them as a
// cluster scenario whose command is the benchmark's `cluster` question.
func benchScenario(b *testing.B, cfg meshgen.Config) *Scenario {
	b.Helper()
	m, err := meshgen.Generate(cfg)
	if err != nil {
		b.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "meshgen-")
	if err != nil {
		b.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if err := m.WriteFiles(dir, meshgen.YAML); err != nil {
		b.Fatal(err)
	}
	command := strings.Join(m.Queries().ClusterArgs(), " ")
	args, err := ParseArgs(command)
	if err != nil {
		b.Fatal(err)
	}
	var docs []Document
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".yaml") {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		ds, err := SplitDocuments(data)
		if err != nil {
			return fmt.Errorf("%s: %v", p, err)
		}
		for i := range ds {
			ds[i].File = p
		}
		docs = append(docs, ds...)
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	s, err := Build(docs, args.Namespace)
	if err != nil {
		b.Fatal(err)
	}
	s.Dir, s.Command, s.Args = dir, command, args
	return s
}

// istioBench is an in-process istiod serving one mesh, and the client proxy as it connected.
type istioBench struct {
	server   *xds.FakeDiscoveryServer
	proxy    *model.Proxy
	services int
	outbound int
}

var istioBenches = map[float64]*istioBench{}

// istiodAt starts istiod on the mesh of one scale, once per test binary: -count repeats the
// measurement, not the minutes of setup.
func istiodAt(b *testing.B, scale float64) *istioBench {
	b.Helper()
	if ib, ok := istioBenches[scale]; ok {
		return ib
	}
	start := time.Now()
	cfg := meshgen.Config{Seed: 1, Sizes: meshgen.Scaled(scale)}
	sc := benchScenario(b, cfg)
	// The size in the benchmark's name is the mesh's, as the other benchmarks name it
	// (hack/meshgen report lines them up by it); the waypoints' Services are not counted.
	ib := &istioBench{services: cfg.Sizes.Services}
	kube := 0
	for _, o := range sc.Kube {
		if o.GetObjectKind().GroupVersionKind().Kind == "Service" {
			kube++
		}
	}
	if want := cfg.Sizes.Services + cfg.Sizes.Waypoints; kube != want {
		b.Fatalf("the scenario holds %d Services, the mesh %d (and its waypoints')", kube, want)
	}
	proxy, err := sc.BuildClientProxy()
	if err != nil {
		b.Fatal(err)
	}
	f := &processFailer{}
	ib.server = xds.NewFakeDiscoveryServer(f, xds.FakeOptions{KubernetesObjects: sc.Kube, Configs: sc.Configs, MeshConfig: sc.Mesh})
	// Connecting makes istiod compute the proxy's state as it does for a real client. Ask for
	// one endpoint assignment only: the full CDS answer outgrows the test client's gRPC limit.
	ads := ib.server.ConnectADS().WithID(proxy.ID).WithMetadata(proxy.Metadata).WithTimeout(5 * time.Minute)
	ads.RequestResponseAck(f, &discovery.DiscoveryRequest{
		TypeUrl:       v3.EndpointType,
		ResourceNames: []string{"outbound|8080||" + sc.ResolveHost(sc.Args.Target, sc.Args.Namespace)},
	})
	id := strings.Split(proxy.ID, "~")[2]
	for _, c := range ib.server.Discovery.Clients() {
		if c.Proxy().ID == id {
			ib.proxy = c.Proxy()
		}
	}
	if ib.proxy == nil {
		b.Fatalf("the client proxy %s is not connected", proxy.ID)
	}
	all, _ := ib.server.ConfigGen.BuildClusters(ib.proxy, &model.PushRequest{Push: ib.server.PushContext()})
	for _, r := range all {
		if strings.HasPrefix(r.Name, "outbound|") {
			ib.outbound++
		}
	}
	b.Logf("mesh of scale %g generated and istiod ready in %v; %d clusters, %d outbound",
		scale, time.Since(start).Round(time.Millisecond), len(all), ib.outbound)
	istioBenches[scale] = ib
	return ib
}

// BenchmarkIstioBuildClusters is Istio's CDS generation (ConfigGeneratorImpl.BuildClusters) for
// the benchmark's client proxy, with the PushContext and the proxy's state already computed, as
// istiod has them when it pushes. The proxy is the one istiod builds when the client connects
// over ADS; the config generator runs without its cluster cache, so every call builds every
// cluster, as the engine does.
func BenchmarkIstioBuildClusters(b *testing.B) {
	ConfigureLogging()
	scales, err := meshgen.BenchScales()
	if err != nil {
		b.Fatal(err)
	}
	for _, scale := range scales {
		ib := istiodAt(b, scale)
		b.Run(fmt.Sprintf("services=%d", ib.services), ib.buildClusters)
	}
}

// buildClusters measures BuildClusters for the proxy.
func (ib *istioBench) buildClusters(b *testing.B) {
	req := &model.PushRequest{Push: ib.server.PushContext()}
	b.ReportAllocs()
	for b.Loop() {
		ib.server.ConfigGen.BuildClusters(ib.proxy, req)
	}
	b.ReportMetric(float64(ib.outbound), "clusters/op")
}

// oursAt loads the same mesh as istiodAt for mesh-explain (meshgen.LoadSnapshot, as `-f DIR -R`
// reads it) and builds the index of BenchmarkClusterEveryClusterOfProxy, once per test binary.
func oursAt(b *testing.B, scale float64) *meshgen.EveryClusterBench {
	b.Helper()
	if eb, ok := ourBenches[scale]; ok {
		return eb
	}
	cfg := meshgen.Config{Seed: 1, Sizes: meshgen.Scaled(scale)}
	snap, m, err := meshgen.LoadSnapshot(cfg)
	if err != nil {
		b.Fatal(err)
	}
	eb, err := meshgen.NewEveryClusterBench(snap, m.Queries())
	if err != nil {
		b.Fatal(err)
	}
	ourBenches[scale] = eb
	return eb
}

var ourBenches = map[float64]*meshgen.EveryClusterBench{}

// BenchmarkEveryClusterPaired runs Istio's BuildClusters (as BenchmarkIstioBuildClusters) and
// mesh-explain's every cluster of the same proxy (as pkg/engine/envoycluster
// BenchmarkClusterEveryClusterOfProxy) on the same mesh in one process, by turns: each of the
// meshgen.BenchRounds rounds runs services=N/istio and then services=N/mesh-explain (go test
// -count would repeat each before the other), so the drift of a shared machine's speed over
// minutes reaches both, and hack/meshgen report takes their ratio per round. Both hold the
// other's state in the heap. The two must build the same number of outbound clusters.
func BenchmarkEveryClusterPaired(b *testing.B) {
	ConfigureLogging()
	scales, err := meshgen.BenchScales()
	if err != nil {
		b.Fatal(err)
	}
	rounds, err := meshgen.BenchRounds()
	if err != nil {
		b.Fatal(err)
	}
	for _, scale := range scales {
		ib, eb := istiodAt(b, scale), oursAt(b, scale)
		// Only the number of the checked clusters is kept: the clusters themselves would be live
		// heap that the collections of both measured builds scan.
		clusters, err := everyClusterCount(eb)
		if err != nil {
			b.Fatal(err)
		}
		if clusters != ib.outbound {
			b.Fatalf("mesh-explain builds %d clusters for the proxy, Istio %d outbound", clusters, ib.outbound)
		}
		for range rounds {
			b.Run(fmt.Sprintf("services=%d/istio", ib.services), ib.buildClusters)
			b.Run(fmt.Sprintf("services=%d/mesh-explain", ib.services), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if _, _, err := eb.EveryCluster(); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(clusters), "clusters/op")
			})
		}
	}
}

// everyClusterCount is the number of clusters eb builds for its proxy.
func everyClusterCount(eb *meshgen.EveryClusterBench) (int, error) {
	built, _, err := eb.EveryCluster()
	return len(built), err
}

// processFailer is the test.Failer of an istiod that lives as long as the test binary: it never
// runs cleanups, and a failure ends the benchmark.
type processFailer struct{}

func (processFailer) Fail()                             { panic("istiod setup failed") }
func (processFailer) FailNow()                          { panic("istiod setup failed") }
func (processFailer) Fatal(args ...any)                 { panic(fmt.Sprint(args...)) }
func (processFailer) Fatalf(format string, args ...any) { panic(fmt.Sprintf(format, args...)) }
func (processFailer) Log(args ...any)                   { fmt.Fprintln(os.Stderr, args...) }
func (processFailer) Logf(format string, args ...any)   { fmt.Fprintf(os.Stderr, format+"\n", args...) }
func (processFailer) Helper()                           {}
func (processFailer) Cleanup(func())                    {}
func (processFailer) Skip(args ...any)                  { panic(fmt.Sprint(args...)) }
func (processFailer) TempDir() string {
	d, err := os.MkdirTemp("", "istiod-bench-")
	if err != nil {
		panic(err)
	}
	return d
}
