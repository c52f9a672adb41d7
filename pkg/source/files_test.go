package source

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/model"
)

func key(kind, ns, name string) model.ObjectKey {
	return model.ObjectKey{Kind: kind, Namespace: ns, Name: name}
}

// keys lists the loaded objects as `Kind ns/name`, sorted.
func keys(snap *model.Snapshot) []string {
	var out []string
	for k := range snap.Sources {
		out = append(out, k.Ref().String())
	}
	sort.Strings(out)
	return out
}

func loadTestdataFiles(t *testing.T, recursive bool) *model.Snapshot {
	t.Helper()
	snap, err := load(t.Context(), Spec{Files: []string{"testdata/files"}, Recursive: recursive, DefaultNamespace: "bookinfo"}, nil)
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	if len(snap.Issues) != 0 {
		t.Fatalf("unexpected issues: %+v", snap.Issues)
	}
	return snap
}

func TestLoadFilesReadsEveryDocumentOfEveryFormat(t *testing.T) {
	snap := loadTestdataFiles(t, true)
	want := []string{
		"AuthorizationPolicy bookinfo/allow-get", // nested/ (-R)
		"Deployment bookinfo/reviews-v1",         // apps/v1, kept for deployment/NAME
		"DestinationRule bookinfo/reviews",       // networking.istio.io/v1beta1
		"EnvoyFilter bookinfo/ef",                // second object of a JSON stream
		"Namespace bookinfo",                     // cluster-scoped
		"PeerAuthentication bookinfo/default",    // item of a v1 List
		"Pod bookinfo/reviews-v1-abc",            // item of a v1 List
		"Service bookinfo/reviews",               // no namespace: takes -n
		"Sidecar bookinfo/default",               // JSON
	}
	if diff := cmp.Diff(want, keys(snap)); diff != "" {
		t.Errorf("loaded objects (-want +got):\n%s", diff)
	}
	if len(snap.DestinationRules) != 1 || len(snap.Deployments) != 1 || len(snap.Pods) != 1 || len(snap.EnvoyFilters) != 1 {
		t.Fatalf("slices not filled: %d DRs, %d deployments, %d pods, %d envoyfilters",
			len(snap.DestinationRules), len(snap.Deployments), len(snap.Pods), len(snap.EnvoyFilters))
	}
	dr := snap.DestinationRules[0]
	if dr.APIVersion != "networking.istio.io/v1" || dr.Kind != "DestinationRule" {
		t.Errorf("DestinationRule type meta = %s %s, want networking.istio.io/v1 DestinationRule", dr.APIVersion, dr.Kind)
	}
	if got := dr.Spec.GetTrafficPolicy().GetPortLevelSettings()[1].GetConnectionPool().GetTcp().GetMaxConnections(); got != 100 {
		t.Errorf("portLevelSettings[1] maxConnections = %d, want 100", got)
	}
	if got := dr.Spec.GetTrafficPolicy().GetConnectionPool().GetTcp().GetConnectTimeout().AsDuration().String(); got != "2s" {
		t.Errorf("connectTimeout = %s, want 2s", got)
	}
	if got := snap.Pods[0].Status.PodIP; got != "10.0.0.7" {
		t.Errorf("pod IP = %q, want 10.0.0.7", got)
	}
	if got := snap.PeerAuthentications[0].Spec.GetPortLevelMtls()[9090].GetMode().String(); got != "DISABLE" {
		t.Errorf("portLevelMtls[9090] = %s, want DISABLE", got)
	}
	if got := snap.Deployments[0].Spec.Selector.MatchLabels["version"]; got != "v1" {
		t.Errorf("deployment selector version = %q, want v1", got)
	}
	if got := snap.Namespaces[0].Labels["istio-injection"]; got != "enabled" {
		t.Errorf("namespace label = %q, want enabled", got)
	}
	for k, src := range snap.Sources {
		if src.Live || src.Overlay || src.Position == nil {
			t.Errorf("%v: source %+v, want a file position only", k, src)
		}
	}
}

func TestLoadFilesWithoutRecursionSkipsSubdirectories(t *testing.T) {
	snap := loadTestdataFiles(t, false)
	for _, k := range keys(snap) {
		if strings.HasPrefix(k, "AuthorizationPolicy") {
			t.Errorf("loaded %s from a subdirectory without -R", k)
		}
	}
	if len(snap.Sources) != 8 {
		t.Errorf("loaded %d objects, want 8: %v", len(snap.Sources), keys(snap))
	}
}

func TestFieldPositions(t *testing.T) {
	snap := loadTestdataFiles(t, true)
	dr := key("DestinationRule", "bookinfo", "reviews")
	tests := []struct {
		name string
		key  model.ObjectKey
		path string
		want string
	}{
		{"document start", dr, "", "testdata/files/bookinfo.yaml:20:1"},
		{"plain field", dr, "spec.host", "testdata/files/bookinfo.yaml:26:3"},
		{"port-level setting selected by port number", dr, "spec.trafficPolicy.portLevelSettings[port=9080].connectionPool.tcp.maxConnections", "testdata/files/bookinfo.yaml:41:11"},
		{"list index", dr, "spec.trafficPolicy.portLevelSettings[0].connectionPool.tcp.maxConnections", "testdata/files/bookinfo.yaml:36:11"},
		{"subset selected by name", dr, "spec.subsets[name=v1].labels", "testdata/files/bookinfo.yaml:44:5"},
		{"subset traffic policy", dr, "spec.subsets[name=v2].trafficPolicy.loadBalancer.simple", "testdata/files/bookinfo.yaml:51:9"},
		{"absent port falls back to the list", dr, "spec.trafficPolicy.portLevelSettings[port=9999].connectionPool", "testdata/files/bookinfo.yaml:31:5"},
		{"absent field falls back to its parent", dr, "spec.trafficPolicy.connectionPool.http.idleTimeout", "testdata/files/bookinfo.yaml:28:5"},
		{"map key in brackets", key("PeerAuthentication", "bookinfo", "default"), "spec.portLevelMtls[9090].mode", "testdata/files/list.yaml:14:9"},
		{"List item start", key("Pod", "bookinfo", "reviews-v1-abc"), "", "testdata/files/list.yaml:15:3"},
		{"nested list indexes", key("AuthorizationPolicy", "bookinfo", "allow-get"), "spec.rules[1].to[0].operation.ports", "testdata/files/nested/authz.yaml:18:9"},
		{"JSON flow list item", key("Sidecar", "bookinfo", "default"), "spec.egress[0].hosts[1]", "testdata/files/sidecar.json:6:34"},
		{"second object of a JSON stream", key("EnvoyFilter", "bookinfo", "ef"), "spec.configPatches[0].applyTo", "testdata/files/sidecar.json:9:152"},
		{"service port by number", key("Service", "bookinfo", "reviews"), "spec.ports[port=9080].name", "testdata/files/bookinfo.yaml:17:5"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := snap.FieldPosition(tt.key, tt.path)
			if p == nil {
				t.Fatalf("no position for %v %s", tt.key, tt.path)
			}
			if p.String() != tt.want {
				t.Errorf("FieldPosition(%s) = %s, want %s", tt.path, p, tt.want)
			}
		})
	}
}

func TestLoadStdin(t *testing.T) {
	in := strings.NewReader(`apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata:
  name: reviews
spec:
  host: reviews
  trafficPolicy:
    tls:
      mode: ISTIO_MUTUAL
`)
	snap, err := load(t.Context(), Spec{Files: []string{"-"}, Stdin: in, DefaultNamespace: "bookinfo"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	k := key("DestinationRule", "bookinfo", "reviews")
	if got := snap.FieldPosition(k, "spec.trafficPolicy.tls.mode").String(); got != "<stdin>:9:7" {
		t.Errorf("position = %s, want <stdin>:9:7", got)
	}
}

func TestLoadFilesErrors(t *testing.T) {
	tests := []struct {
		name string
		spec Spec
		want string
	}{
		{"path does not exist", Spec{Files: []string{"testdata/nope.yaml"}}, `the path "testdata/nope.yaml" does not exist`},
		{"stdin without a reader", Spec{Files: []string{"-"}}, "-f - reads standard input, but none is available"},
		{"nothing to load", Spec{}, "nothing to load (pass -f FILE|DIR|- or use a cluster)"},
		{"overlay without a cluster", Spec{Files: []string{"testdata/files"}, Overlay: true}, "--overlay lays files over the cluster, but no cluster is configured"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := load(t.Context(), tt.spec, nil)
			if err == nil || err.Error() != tt.want {
				t.Errorf("error = %v, want %q", err, tt.want)
			}
		})
	}
}

func TestDirectoryWalkSkipsExpectedOutputsButExplicitFilesAreRead(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "svc.yml"), "apiVersion: v1\nkind: Service\nmetadata: {name: a}\n")
	write(t, filepath.Join(dir, "want.ztunnel.yaml"), "apiVersion: v1\nkind: Service\nmetadata: {name: want}\n")
	write(t, filepath.Join(dir, "notes.txt"), "apiVersion: v1\nkind: Service\nmetadata: {name: txt}\n")
	snap, err := load(t.Context(), Spec{Files: []string{dir}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"Service default/a"}, keys(snap)); diff != "" {
		t.Errorf("directory (-want +got):\n%s", diff)
	}
	snap, err = load(t.Context(), Spec{Files: []string{filepath.Join(dir, "notes.txt")}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"Service default/txt"}, keys(snap)); diff != "" {
		t.Errorf("explicit file (-want +got):\n%s", diff)
	}
}

func TestDuplicateObjectInFilesWarnsAndLaterWins(t *testing.T) {
	in := strings.NewReader(`apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: r, namespace: ns}
spec: {host: first}
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: r, namespace: ns}
spec: {host: second}
`)
	snap, err := load(t.Context(), Spec{Files: []string{"-"}, Stdin: in}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.DestinationRules) != 1 || snap.DestinationRules[0].Spec.Host != "second" {
		t.Fatalf("want the second definition, got %v", snap.DestinationRules)
	}
	want := []issue{{
		Severity: "warning", Resource: "DestinationRule ns/r", Position: "<stdin>:6:1",
		Message: "defined more than once; this definition replaces the one at <stdin>:1:1",
	}}
	if diff := cmp.Diff(want, issues(snap)); diff != "" {
		t.Errorf("issues (-want +got):\n%s", diff)
	}
}

func TestDisplayPathOutsideWorkingDirectoryIsAbsolute(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "svc.yaml")
	write(t, p, "apiVersion: v1\nkind: Service\nmetadata: {name: a}\n")
	snap, err := LoadFiles([]string{p}, "x")
	if err != nil {
		t.Fatal(err)
	}
	got := snap.Position(key("Service", "x", "a"))
	if got == nil || got.File != filepath.ToSlash(p) || got.Line != 1 {
		t.Errorf("position = %v, want %s:1:1", got, filepath.ToSlash(p))
	}
}

func write(t *testing.T, p, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// issue is a LoadIssue in comparable form.
type issue struct {
	Severity   string
	Resource   string
	Position   string
	Field      string
	Message    string
	Incomplete []string
}

func issues(snap *model.Snapshot) []issue {
	var out []issue
	for _, i := range snap.Issues {
		x := issue{Severity: i.Severity, Field: i.Field, Message: i.Message, Incomplete: i.Incomplete}
		if i.Resource != nil {
			x.Resource = i.Resource.String()
		}
		if i.Position != nil {
			x.Position = i.Position.String()
		}
		out = append(out, x)
	}
	return out
}
