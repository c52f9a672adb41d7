package testkit

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestReadArgs(t *testing.T) {
	dir := t.TempDir()
	args := "# the title\n# more words\n\ncluster reviews -n bookinfo\nauthz ignored\n"
	if err := os.WriteFile(filepath.Join(dir, "args"), []byte(args), 0o644); err != nil {
		t.Fatal(err)
	}
	a, err := ReadArgs(dir)
	if err != nil {
		t.Fatal(err)
	}
	if a.Title != "the title" || !slices.Equal(a.Command, []string{"cluster", "reviews", "-n", "bookinfo"}) {
		t.Errorf("ReadArgs = %+v", a)
	}

	if err := os.WriteFile(filepath.Join(dir, "args"), []byte("# only a title\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadArgs(dir); err == nil {
		t.Error("ReadArgs accepted an args file without a command line")
	}
}

// Every scenario folder of the repository has a readable args file.
func TestScenarioFoldersHaveArgs(t *testing.T) {
	root := RepoRoot(t)
	for _, kind := range []string{"cluster", "authz"} {
		dirs := ScenarioDirs(t, root, kind)
		if len(dirs) == 0 {
			t.Fatalf("no %s scenarios under %s", kind, root)
		}
		for _, d := range dirs {
			if _, err := ReadArgs(filepath.Join(root, d)); err != nil {
				t.Error(err)
			}
		}
	}
}

func TestSnapshotFilesEachKindAndSorts(t *testing.T) {
	s := Snapshot(
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "b", Name: "x"}},
		nil,
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "y"}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "a"}},
	)
	if len(s.Services) != 2 || len(s.Namespaces) != 1 {
		t.Fatalf("Snapshot filed %d services and %d namespaces, want 2 and 1", len(s.Services), len(s.Namespaces))
	}
	if s.Services[0].Namespace != "a" {
		t.Errorf("services not sorted: first is %s/%s", s.Services[0].Namespace, s.Services[0].Name)
	}
	defer func() {
		if recover() == nil {
			t.Error("Add accepted a kind a Snapshot does not hold")
		}
	}()
	Add(s, &corev1.ConfigMap{})
}
