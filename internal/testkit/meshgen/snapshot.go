package meshgen

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/model"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/source"
)

// ScaleEnv names the environment variable that sets the mesh sizes of the engine benchmarks:
// a comma-separated list of scales (1 is 10,000 Services), default DefaultBenchScales.
const ScaleEnv = "MESH_EXPLAIN_BENCH_SCALE"

// DefaultBenchScales keeps a plain `go test -bench` quick; hack/bench.sh sets the real sizes.
const DefaultBenchScales = "0.1"

// BenchScales returns the scales ScaleEnv asks for.
func BenchScales() ([]float64, error) {
	v := os.Getenv(ScaleEnv)
	if v == "" {
		v = DefaultBenchScales
	}
	var out []float64
	for _, f := range strings.Split(v, ",") {
		s, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || s <= 0 {
			return nil, fmt.Errorf("%s=%q: want positive numbers separated by commas", ScaleEnv, v)
		}
		out = append(out, s)
	}
	return out, nil
}

// RoundsEnv names the environment variable that sets how many rounds a paired benchmark runs
// (conformance/istiorun BenchmarkEveryClusterPaired), default 1.
const RoundsEnv = "MESH_EXPLAIN_BENCH_ROUNDS"

// BenchRounds returns the number of rounds RoundsEnv asks for.
func BenchRounds() (int, error) {
	v := os.Getenv(RoundsEnv)
	if v == "" {
		return 1, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("%s=%q: want a positive number", RoundsEnv, v)
	}
	return n, nil
}

// LoadSnapshot generates the mesh of c, writes it to files in a temporary directory and loads
// them with pkg/source, as `-f DIR -R` does; the directory is removed before it returns.
func LoadSnapshot(c Config) (*model.Snapshot, *Mesh, error) {
	m, err := Generate(c)
	if err != nil {
		return nil, nil, err
	}
	dir, err := os.MkdirTemp("", "meshgen-")
	if err != nil {
		return nil, nil, err
	}
	defer os.RemoveAll(dir)
	if err := m.WriteFiles(dir, YAML); err != nil {
		return nil, nil, err
	}
	dirs, err := Dirs(dir)
	if err != nil {
		return nil, nil, err
	}
	snap, err := source.LoadFiles(dirs, "default")
	if err != nil {
		return nil, nil, err
	}
	for _, is := range snap.Issues {
		if is.Severity == "error" {
			return nil, nil, fmt.Errorf("loading the generated mesh: %s", is.Message)
		}
	}
	return snap, m, nil
}

// Dirs returns dir and the directories below it: WriteFiles' layout, for loaders that do not
// walk directories recursively.
func Dirs(dir string) ([]string, error) {
	out := []string{dir}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p != dir {
			out = append(out, p)
		}
		return nil
	})
	return out, err
}

// LoadSmall is LoadSnapshot of the mesh at scale over namespaces namespaces, with the waypoints
// of its ambient namespaces, from seed: the small meshes tests check against.
func LoadSmall(scale float64, namespaces int, seed uint64) (*model.Snapshot, error) {
	sizes := Scaled(scale)
	sizes.Namespaces = namespaces
	sizes.Waypoints = AmbientNamespaces(sizes.Namespaces)
	snap, _, err := LoadSnapshot(Config{Seed: seed, Sizes: sizes})
	return snap, err
}
