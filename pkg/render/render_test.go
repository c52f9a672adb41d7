package render

import (
	"bytes"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"sigs.k8s.io/yaml"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/explain"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/internal/golden"
)

func printResults(t *testing.T, format string, o Options, rs ...*explain.Result) string {
	t.Helper()
	p, err := For(format, o)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if len(rs) == 1 {
		err = p.Print(&buf, rs[0])
	} else {
		err = p.PrintList(&buf, rs)
	}
	if err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

var noColor = Options{Color: ColorNever, Width: 120}

func TestPrint(t *testing.T) {
	cases := map[string]func(t *testing.T) *explain.Result{
		"cluster": func(t *testing.T) *explain.Result { return clusterResult(t) },
		"authz":   func(*testing.T) *explain.Result { return authzResult("a") },
		"empty":   func(*testing.T) *explain.Result { return emptyResult() },
	}
	for name, fixture := range cases {
		for _, format := range []string{FormatTable, FormatWide, FormatJSON, FormatYAML} {
			t.Run(name+"/"+format, func(t *testing.T) {
				got := printResults(t, format, noColor, fixture(t))
				golden.Assert(t, []byte(got), filepath.Join("testdata", "TestPrint", name+"."+format+".golden"))
			})
		}
	}
}

func TestPrintList(t *testing.T) {
	for _, format := range []string{FormatTable, FormatJSON, FormatYAML} {
		t.Run(format, func(t *testing.T) {
			got := printResults(t, format, noColor, authzResult("a"), authzResult("b"))
			golden.Assert(t, []byte(got), filepath.Join("testdata", "TestPrintList", "authz."+format+".golden"))
		})
	}
}

func TestTableANSI(t *testing.T) {
	got := printResults(t, FormatWide, Options{Color: ColorAlways, Width: 120}, clusterResult(t))
	if !strings.Contains(got, "\x1b[") {
		t.Fatal("--color=always printed no escape code")
	}
	golden.Assert(t, []byte(got), filepath.Join("testdata", "TestTableANSI", "cluster.wide.ansi.golden"))
}

func TestColorDecision(t *testing.T) {
	tests := []struct {
		name string
		o    Options
		want bool
	}{
		{"auto on a terminal", Options{Color: ColorAuto, TTY: true}, true},
		{"auto on a pipe", Options{Color: ColorAuto}, false},
		{"auto on a terminal with NO_COLOR", Options{Color: ColorAuto, TTY: true, NoColor: true}, false},
		{"never on a terminal", Options{Color: ColorNever, TTY: true}, false},
		{"always on a pipe with NO_COLOR", Options{Color: ColorAlways, NoColor: true}, true},
		{"unset mode behaves as auto", Options{TTY: true}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.o.ColorOn(); got != tt.want {
				t.Errorf("ColorOn() = %v, want %v", got, tt.want)
			}
			out := printResults(t, FormatTable, Options{Color: tt.o.Color, TTY: tt.o.TTY, NoColor: tt.o.NoColor}, clusterResult(t))
			if has := strings.Contains(out, "\x1b["); has != tt.want {
				t.Errorf("escape codes in output = %v, want %v", has, tt.want)
			}
		})
	}
}

func TestParseColorMode(t *testing.T) {
	for _, s := range []string{"auto", "always", "never"} {
		if m, err := ParseColorMode(s); err != nil || string(m) != s {
			t.Errorf("ParseColorMode(%q) = %q, %v", s, m, err)
		}
	}
	if _, err := ParseColorMode("sometimes"); err == nil || !strings.Contains(err.Error(), "auto, always, never") {
		t.Errorf("ParseColorMode(sometimes) error = %v, want the allowed values listed", err)
	}
}

func TestTableFitsWidth(t *testing.T) {
	for _, width := range []int{60, 80, 100} {
		out := printResults(t, FormatWide, Options{Color: ColorNever, Width: width}, clusterResult(t))
		for _, line := range strings.Split(out, "\n") {
			// Summary lines are not tables and may be longer; every table line must fit.
			if strings.HasPrefix(line, "Host ") || strings.HasPrefix(line, "Cluster ") || strings.HasPrefix(line, "  ") {
				continue
			}
			if w := len([]rune(line)); w > width {
				t.Errorf("width %d: line of %d columns: %q", width, w, line)
			}
		}
	}
}

func TestTableIsDeterministic(t *testing.T) {
	first := printResults(t, FormatWide, noColor, clusterResult(t))
	for range 5 {
		if got := printResults(t, FormatWide, noColor, clusterResult(t)); got != first {
			t.Fatalf("two runs differ:\n%s", golden.Diff("first", "again", first, got))
		}
	}
}

func TestTableHidesWideSections(t *testing.T) {
	narrow := printResults(t, FormatTable, noColor, clusterResult(t))
	wide := printResults(t, FormatWide, Options{Color: ColorNever, Width: 400}, clusterResult(t))
	if strings.Contains(narrow, "SERVICES IN SCOPE") || strings.Contains(narrow, "SHADOWED") {
		t.Error("-o table shows a wide-only section or the SHADOWED column")
	}
	if !strings.Contains(wide, "SERVICES IN SCOPE") || !strings.Contains(wide, "10s from MeshConfig · connectTimeout (overridden)") {
		t.Errorf("-o wide lacks the wide section or the shadowed value:\n%s", wide)
	}
}

func TestJSONIsTheResult(t *testing.T) {
	res := clusterResult(t)
	out := printResults(t, FormatJSON, noColor, res)
	var back explain.Result
	if err := json.Unmarshal([]byte(out), &back); err != nil {
		t.Fatal(err)
	}
	if back.Kind != res.Kind || len(back.Objects) != 2 || len(back.Objects[0].Origins) != len(res.Objects[0].Origins) ||
		len(back.Diagnostics) != 3 || back.Proxy == nil || back.Objects[0].Origins[0].Origin.Position == nil {
		t.Fatalf("round trip lost data: %+v", back)
	}
	y := printResults(t, FormatYAML, noColor, res)
	fromYAML, err := yaml.YAMLToJSON([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	var a, b any
	if err := json.Unmarshal([]byte(out), &a); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(fromYAML, &b); err != nil {
		t.Fatal(err)
	}
	if !jsonEqual(a, b) {
		t.Fatal("-o yaml is not the same document as -o json")
	}
}

// TestDocumentPrintsTheMessageAsValue: an object whose engine left Value empty (the second
// cluster of the fixture) is printed with its Message in protojson form, in JSON and YAML
// alike; an object with a Value (the first) keeps it.
func TestDocumentPrintsTheMessageAsValue(t *testing.T) {
	res := clusterResult(t)
	if len(res.Objects[0].Value) == 0 || len(res.Objects[1].Value) != 0 || res.Objects[1].Message == nil {
		t.Fatal("the fixture's first cluster must have a value, its second only a message")
	}
	fromMessage, err := protojson.Marshal(res.Objects[1].Message)
	if err != nil {
		t.Fatal(err)
	}
	for _, format := range []string{FormatJSON, FormatYAML} {
		out := []byte(printResults(t, format, noColor, res))
		if format == FormatYAML {
			if out, err = yaml.YAMLToJSON(out); err != nil {
				t.Fatal(err)
			}
		}
		var back explain.Result
		if err := json.Unmarshal(out, &back); err != nil {
			t.Fatal(err)
		}
		for i, want := range [][]byte{res.Objects[0].Value, fromMessage} {
			var got, wantv any
			if err := json.Unmarshal(back.Objects[i].Value, &got); err != nil {
				t.Fatalf("%s: object %d: %v in %q", format, i, err, back.Objects[i].Value)
			}
			if err := json.Unmarshal(want, &wantv); err != nil {
				t.Fatal(err)
			}
			if !jsonEqual(got, wantv) {
				t.Errorf("%s: object %d has value %s, want %s", format, i, back.Objects[i].Value, want)
			}
		}
	}
	if res.Objects[1].Value != nil {
		t.Error("printing changed the Result")
	}
}

func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}

func TestEnvoy(t *testing.T) {
	res := clusterResult(t)
	// The printer sorts by name (byte order: 'v' sorts before '|').
	out := printResults(t, FormatEnvoy, noColor, res)
	golden.Assert(t, []byte(out), filepath.Join("testdata", "TestEnvoy", "cluster.envoy.golden"))

	var raw []json.RawMessage
	if err := json.Unmarshal([]byte(out), &raw); err != nil {
		t.Fatal(err)
	}
	if len(raw) != 2 {
		t.Fatalf("got %d clusters, want 2", len(raw))
	}
	for i, want := range []string{"outbound|9080|v1|reviews.bookinfo.svc.cluster.local", "outbound|9080||reviews.bookinfo.svc.cluster.local"} {
		var c clusterv3.Cluster
		if err := protojson.Unmarshal(raw[i], &c); err != nil {
			t.Fatalf("cluster %d is not protojson: %v", i, err)
		}
		if c.GetName() != want {
			t.Errorf("cluster %d is %q, want %q", i, c.GetName(), want)
		}
		if !proto.Equal(&c, reviewsCluster(t, want)) {
			t.Errorf("cluster %d does not round-trip", i)
		}
	}
}

func TestEnvoyEmpty(t *testing.T) {
	if got := printResults(t, FormatEnvoy, noColor, emptyResult()); got != "[]\n" {
		t.Fatalf("empty -o envoy = %q, want %q", got, "[]\n")
	}
}

func TestFor(t *testing.T) {
	_, err := For("xml", Options{Formats: []string{"table", "wide", "json", "yaml", "envoy"}})
	var ufe *UnknownFormatError
	if !errors.As(err, &ufe) || err.Error() != `unknown output format "xml" (allowed formats: table, wide, json, yaml, envoy)` {
		t.Fatalf("For(xml) error = %v", err)
	}
	if _, err := For("envoy", Options{Formats: []string{"table", "ztunnel"}}); err == nil {
		t.Fatal("For accepted a format outside Options.Formats")
	}
	all := []string{FormatTable, FormatWide, FormatJSON, FormatYAML, FormatEnvoy, FormatZtunnel}
	if _, err := For("xml", Options{}); err == nil || err.Error() != `unknown output format "xml" (allowed formats: `+strings.Join(all, ", ")+")" {
		t.Fatalf("For(xml) without Formats: %v", err)
	}
	for _, f := range all {
		if _, err := For(f, Options{}); err != nil {
			t.Errorf("For(%s): %v", f, err)
		}
	}
}
