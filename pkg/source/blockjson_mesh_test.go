package source_test

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	sigsyaml "sigs.k8s.io/yaml"

	gen "github.com/mesh-explain/kubectl-mesh-explain/internal/testkit/meshgen"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/source"
)

// TestBlockToJSONConvertsTheBenchMesh requires blockToJSON to convert every document of the
// benchmark's generated mesh, as sigs.k8s.io/yaml does: the speed of `check -f` on it
// (docs/performance.md) rests on that.
func TestBlockToJSONConvertsTheBenchMesh(t *testing.T) {
	sizes := gen.Scaled(0.01)
	sizes.Namespaces = 8
	sizes.Waypoints = gen.AmbientNamespaces(sizes.Namespaces)
	m, err := gen.Generate(gen.Config{Seed: 1, Sizes: sizes})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := m.WriteFiles(dir, gen.YAML); err != nil {
		t.Fatal(err)
	}
	docs := 0
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, doc := range bytes.Split(data, []byte("\n---\n")) {
			if len(bytes.TrimSpace(doc)) == 0 {
				continue
			}
			docs++
			got, ok := source.BlockToJSON(doc)
			if !ok {
				t.Errorf("%s: not converted:\n%s", p, doc)
				continue
			}
			want, err := sigsyaml.YAMLToJSONStrict(doc)
			if err != nil || !bytes.Equal(got, want) {
				t.Errorf("%s: got %s, sigs.k8s.io/yaml %s (%v)", p, got, want, err)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if docs < 100 {
		t.Fatalf("only %d documents generated", docs)
	}
	t.Logf("%d documents converted", docs)
}
