package source

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"gopkg.in/yaml.v3"
	sigsyaml "sigs.k8s.io/yaml"
)

// fullHeader is the header a full parse gives a YAML document (sigs.k8s.io/yaml, then the
// lenient header decode of loadDocument), and the line of its root node (yaml.v3); ok is false
// when sigs.k8s.io/yaml rejects the document.
func fullHeader(text []byte) (header, int, bool) {
	js, err := sigsyaml.YAMLToJSONStrict(text)
	if err != nil {
		return header{}, 0, false
	}
	var h header
	_ = json.Unmarshal(js, &h)
	h.Items = nil
	line := 0
	var n yaml.Node
	if yaml.Unmarshal(text, &n) == nil {
		if r := resolve(&n); r != nil {
			line = r.Line
		}
	}
	return h, line, true
}

// checkScan fails when scanHeader accepts a document but reads another header than the full
// parse, or places it elsewhere.
func checkScan(t *testing.T, where string, text []byte) (accepted bool) {
	t.Helper()
	sc, ok := scanHeader(text)
	if !ok {
		return false
	}
	h, line, parsed := fullHeader(text)
	if !parsed {
		return true // malformed below the header: the scan does not look there
	}
	if diff := cmp.Diff(h, sc.h); diff != "" {
		t.Errorf("%s: scanned header differs from the full parse (-full +scan):\n%s\n%s", where, diff, text)
	}
	if line != 0 && line != sc.line {
		t.Errorf("%s: scan puts the root at line %d, yaml.v3 at %d:\n%s", where, sc.line, line, text)
	}
	return true
}

// TestScanAgreesWithTheFullParseOnTestdata: for every YAML document of the repository's
// testdata, the scan either reads the header the full parse reads, or defers to it.
func TestScanAgreesWithTheFullParseOnTestdata(t *testing.T) {
	var docs, accepted int
	for _, root := range []string{"testdata", "../../testdata"} {
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !wantedFile(d.Name()) && !strings.HasPrefix(d.Name(), "want.") {
				return err
			}
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			for _, ch := range splitYAML(data) {
				if ch.badSeparator != "" || len(strings.TrimSpace(string(ch.text))) == 0 {
					continue
				}
				docs++
				if checkScan(t, p, ch.text) {
					accepted++
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%d of %d documents scanned", accepted, docs)
	if docs < 100 || accepted*2 < docs {
		t.Errorf("the scan accepts %d of %d documents; the test data should exercise it", accepted, docs)
	}
}

func TestScanHeader(t *testing.T) {
	type hdr struct{ apiVersion, kind, name, namespace string }
	tests := []struct {
		name string
		in   string
		want *hdr // nil: the scan defers to the full parse
		line int
	}{
		{"block style", "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  namespace: ns\nspec: {}\n", &hdr{"v1", "Pod", "p", "ns"}, 1},
		{"leading comments and quotes", "# c\n\napiVersion: 'v1'\nkind: \"Pod\" # c\nmetadata:\n  # c\n  name: p\n", &hdr{"v1", "Pod", "p", ""}, 3},
		{"flow metadata", "apiVersion: v1\nkind: Namespace\nmetadata: {name: a, labels: x}\n", &hdr{"v1", "Namespace", "a", ""}, 1},
		{"no metadata", "apiVersion: v1\nkind: Pod\n", &hdr{"v1", "Pod", "", ""}, 1},
		{"empty quoted namespace", "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  namespace: ''\n", &hdr{"v1", "Pod", "p", ""}, 1},
		{"metadata after spec, lists at the key's indentation", "spec:\n  a:\n  - b\nkind: Pod\nmetadata:\n  ownerReferences:\n  - name: other\n    kind: X\n  name: p\nitems2:\n- name: q\napiVersion: v1\n", &hdr{"v1", "Pod", "p", ""}, 1},
		{"block scalars hide what looks like keys", "apiVersion: v1\nkind: ConfigMap\ndata: |\n  kind: Service\nmetadata:\n  annotations:\n    a: >-\n      name: x\n  name: istio\n  b:\n    - |\n      namespace: y\n  namespace: istio-system\n", &hdr{"v1", "ConfigMap", "istio", "istio-system"}, 1},
		{"CRLF", "apiVersion: v1\r\nkind: Pod\r\nmetadata:\r\n  name: p\r\n", &hdr{"v1", "Pod", "p", ""}, 1},

		{"YAML 1.1 boolean", "apiVersion: v1\nkind: Service\nmetadata:\n  name: s\n  namespace: n\n", nil, 0},
		{"name starting with a digit", "apiVersion: v1\nkind: Service\nmetadata:\n  name: 1e3\n", nil, 0},
		{"null name", "apiVersion: v1\nkind: Service\nmetadata:\n  name: ~\n", nil, 0},
		{"escapes", "apiVersion: v1\nkind: \"P\\x6fd\"\n", nil, 0},
		{"key in another case", "apiVersion: v1\nkind: Pod\nKind: Service\n", nil, 0},
		{"metadata key in another case", "apiVersion: v1\nkind: Pod\nmetadata:\n  Name: p\n", nil, 0},
		{"repeated key", "apiVersion: v1\nkind: Pod\nkind: Service\n", nil, 0},
		{"repeated metadata key", "apiVersion: v1\nkind: Pod\nmetadata:\n  name: a\n  name: b\n", nil, 0},
		{"quoted root key", "\"kind\": Pod\napiVersion: v1\n", nil, 0},
		{"anchor", "apiVersion: v1\nkind: &k Pod\n", nil, 0},
		{"alias", "apiVersion: v1\nkind: *k\n", nil, 0},
		{"tag", "apiVersion: v1\nkind: !!str Pod\n", nil, 0},
		{"merge key", "apiVersion: v1\nkind: Pod\nmetadata:\n  <<: {name: a}\n", nil, 0},
		{"multi-line quoted scalar swallows a key", "apiVersion: v1\nspec:\n  a: \"x\nkind: Service\n  \"\nkind: Pod\n", nil, 0},
		{"multi-line flow swallows a key", "apiVersion: v1\nspec: [a,\nkind: Service]\nkind: Pod\n", nil, 0},
		{"plain scalar over two lines", "apiVersion: v1\nkind: Pod\nmetadata:\n  name: a\n    b\n", nil, 0},
		{"root key's scalar over two lines", "apiVersion: v1\nkind: Pod\n  Service\n", nil, 0},
		{"indented root", "  apiVersion: v1\n  kind: Pod\n", nil, 0},
		{"flow root", "{apiVersion: v1, kind: Pod}\n", nil, 0},
		{"sequence root", "- apiVersion: v1\n", nil, 0},
		{"metadata is a sequence", "apiVersion: v1\nkind: Pod\nmetadata:\n- name: p\n", nil, 0},
		{"metadata is a string", "apiVersion: v1\nkind: Pod\nmetadata: p\n", nil, 0},
		{"nested flow metadata", "apiVersion: v1\nkind: Pod\nmetadata: {name: a, labels: {b: c}}\n", nil, 0},
		{"tab indentation", "apiVersion: v1\nkind: Pod\nmetadata:\n\tname: p\n", nil, 0},
		{"document end", "apiVersion: v1\nkind: Pod\n...\nkind: Service\n", nil, 0},
		{"directive", "%YAML 1.1\napiVersion: v1\n", nil, 0},
		{"complex key", "? kind\n: Pod\n", nil, 0},
		{"block scalar with an indentation indicator", "apiVersion: v1\nkind: Pod\ndata: |2\n   x\n", nil, 0},
		{"only comments", "# nothing\n", nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sc, ok := scanHeader([]byte(tt.in))
			if tt.want == nil {
				if ok {
					t.Fatalf("scan accepted %q as %+v, want it to defer", tt.in, sc.h)
				}
				return
			}
			if !ok {
				t.Fatalf("scan deferred on %q", tt.in)
			}
			got := hdr{sc.h.APIVersion, sc.h.Kind, sc.h.Metadata.Name, sc.h.Metadata.Namespace}
			if got != *tt.want || sc.line != tt.line {
				t.Errorf("scan = %+v at line %d, want %+v at line %d", got, sc.line, *tt.want, tt.line)
			}
			checkScan(t, tt.name, []byte(tt.in))
		})
	}
}

// TestScanNeverChangesALoad: with the scan, every test input loads the objects, issues, sources
// and field positions it loads when every document is parsed in full, for several read plans.
func TestScanNeverChangesALoad(t *testing.T) {
	var dirs []string
	for _, pattern := range []string{"../../testdata/scenarios/*/*", "../../testdata/examples/*", "testdata/*"} {
		m, _ := filepath.Glob(pattern)
		dirs = append(dirs, m...)
	}
	if len(dirs) < 20 {
		t.Fatalf("only %d input folders found", len(dirs))
	}
	plans := map[string][]Read{
		"everything": nil,
		"default and bookinfo": {
			{Kind: KindNamespace, Namespaces: []string{"default", "bookinfo"}},
			{Kind: KindService, Namespaces: []string{"default", "bookinfo"}},
			{Kind: KindPod, Namespaces: []string{"bookinfo"}},
			{Kind: KindDestinationRule, Namespaces: []string{"istio-system", "bookinfo"}},
			{Kind: KindVirtualService},
			{Kind: KindPeerAuthentication, Namespaces: []string{"istio-system"}},
		},
		"nodes": {{Kind: KindNode, Namespaces: []string{"node-a", "node-1"}}},
	}
	for _, dir := range dirs {
		for name, reads := range plans {
			spec := Spec{Files: []string{dir}, Recursive: true, DefaultNamespace: "default", Reads: reads, FilterFiles: reads != nil}
			scanDocuments = false
			full, errFull := load(t.Context(), spec, nil)
			scanDocuments = true
			spec.Cache = NewFileCache()
			scanned, errScan := load(t.Context(), spec, nil)
			again, _ := load(t.Context(), spec, nil)
			if (errFull == nil) != (errScan == nil) {
				t.Fatalf("%s, %s: error %v with the scan, %v without", dir, name, errScan, errFull)
			}
			if errFull != nil {
				continue
			}
			if diff := cmp.Diff(keys(full), keys(scanned)); diff != "" {
				t.Errorf("%s, %s: objects (-full +scanned):\n%s", dir, name, diff)
			}
			if diff := cmp.Diff(issues(full), issues(scanned)); diff != "" {
				t.Errorf("%s, %s: issues (-full +scanned):\n%s", dir, name, diff)
			}
			if diff := cmp.Diff(issues(scanned), issues(again)); diff != "" {
				t.Errorf("%s, %s: issues of a cached load (-first +again):\n%s", dir, name, diff)
			}
			for k, src := range full.Sources {
				if got := scanned.Sources[k].Position.String(); got != src.Position.String() {
					t.Errorf("%s, %s: %s at %s, want %s", dir, name, k.Ref(), got, src.Position)
				}
				for _, path := range []string{"metadata", "metadata.name", "spec", "spec.ports[0]", "spec.trafficPolicy.tls", "data.mesh"} {
					if got, want := scanned.FieldPosition(k, path).String(), full.FieldPosition(k, path).String(); got != want {
						t.Errorf("%s, %s: %s field %s at %s, want %s", dir, name, k.Ref(), path, got, want)
					}
				}
			}
		}
	}
}

// FuzzScanHeader checks that the scan never reads another header than the full parse.
func FuzzScanHeader(f *testing.F) {
	f.Add([]byte("apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  namespace: ns\n"))
	f.Add([]byte("apiVersion: v1\nkind: ConfigMap\ndata: |\n  kind: Service\nmetadata: {name: a}\n"))
	f.Add([]byte("apiVersion: v1\nspec:\n  a: \"x\nkind: Service\n  \"\nkind: Pod\n"))
	f.Add([]byte("kind: Pod\nmetadata:\n  ownerReferences:\n  - name: x\n  name: p\napiVersion: v1\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		checkScan(t, "input", data)
	})
}
