package e2e

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// TestOverlayWhatIf: `--overlay -f change.yaml` against the cluster explains the state after
// the change (the same answer as an offline run on the changed objects), and leaves the
// cluster as it was: same objects, same resourceVersions, and no write request in the audit
// log.
func TestOverlayWhatIf(t *testing.T) {
	dir := filepath.Join(env.root, "e2e", "testdata", "overlay")
	base := mustDecodeFile(t, filepath.Join(dir, "base.yaml"))
	change := mustDecodeFile(t, filepath.Join(dir, "change.yaml"))
	c := admin(t)
	c.apply(t, base)

	q := []string{"cluster", "reviews.bookinfo.svc.cluster.local", "-n", "frontend", "--from", "pod/productpage-v1"}
	before := c.versions(t, append(append([]*unstructured.Unstructured{}, base...), change...))
	plain := runPlugin(kubeconfig("admin"), append(slices.Clone(q), "-o", "envoy")...)
	mustSucceed(t, plain)

	// The state after the change, as files: base with the changed objects replaced or added.
	after := t.TempDir()
	writeObjects(t, filepath.Join(after, "after.yaml"), overlay(base, change))

	mark := auditMark(t)
	for _, format := range []string{"envoy", "json"} {
		want := runPlugin(offline(), append(slices.Clone(q), "-f", after, "-o", format)...)
		mustSucceed(t, want)
		got := runPlugin(kubeconfig("admin"), append(slices.Clone(q), "--overlay", "-f", filepath.Join(dir, "change.yaml"), "-o", format)...)
		mustSucceed(t, got)
		w, g := want.stdout, got.stdout
		if format == "json" {
			w, g = normaliseJSON(t, w), normaliseJSON(t, g)
		}
		if w != g {
			t.Errorf("-o %s: --overlay (+) differs from the changed state explained offline (-):\n%s", format, diff(w, g))
		}
		if format == "envoy" && got.stdout == plain.stdout {
			t.Errorf("--overlay gave the same clusters as the unchanged cluster; the change was not applied")
		}
	}

	// Only the plugin acts as admin meanwhile (the apiserver's own lease updates are by
	// system:apiserver and are not ours to judge).
	for _, e := range auditEvents(t, mark, "admin") {
		if !slices.Contains([]string{"get", "list", "watch"}, e.Verb) {
			t.Errorf("a write happened during --overlay: %v", e)
		}
	}
	afterVersions := c.versions(t, append(append([]*unstructured.Unstructured{}, base...), change...))
	for k, v := range before {
		if afterVersions[k] != v {
			t.Errorf("%s changed: resourceVersion %q before, %q after", k, v, afterVersions[k])
		}
	}
}

// versions returns the resourceVersion of each object ("" when it does not exist).
func (c *cluster) versions(t *testing.T, objs []*unstructured.Unstructured) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, o := range objs {
		ri, err := c.resource(o)
		if err != nil {
			t.Fatal(err)
		}
		got, err := ri.Get(context.Background(), o.GetName(), metav1.GetOptions{})
		if err != nil {
			out[key(o)] = ""
			continue
		}
		out[key(o)] = got.GetResourceVersion()
	}
	return out
}

// overlay returns base with every object of change replacing the one with the same kind,
// namespace and name, or added when there is none.
func overlay(base, change []*unstructured.Unstructured) []*unstructured.Unstructured {
	replaced := map[string]*unstructured.Unstructured{}
	for _, o := range change {
		replaced[key(o)] = o
	}
	var out []*unstructured.Unstructured
	for _, o := range base {
		if r, ok := replaced[key(o)]; ok {
			out = append(out, r)
			delete(replaced, key(o))
			continue
		}
		out = append(out, o)
	}
	for _, o := range change {
		if _, ok := replaced[key(o)]; ok {
			out = append(out, o)
		}
	}
	return out
}

func mustDecodeFile(t *testing.T, path string) []*unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := decodeObjects(data)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return objs
}

func writeObjects(t *testing.T, path string, objs []*unstructured.Unstructured) {
	t.Helper()
	var data []byte
	for i, o := range objs {
		if i > 0 {
			data = append(data, "---\n"...)
		}
		y, err := yaml.Marshal(o.Object)
		if err != nil {
			t.Fatal(err)
		}
		data = append(data, y...)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}
