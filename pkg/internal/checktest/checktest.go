// Package checktest is a test helper: the union of the per-host and per-workload answers, and
// its comparison with a check report.
//
// It may import: check, explain, the JSON schema validator; tests only.
package checktest

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/check"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/explain"
)

// Union is the union of the diagnostics of many answers, by cause (check.Key), with the hosts,
// clients, workloads and waypoints whose answers report each.
type Union map[string]*Affected

// Affected are the hosts, clients, workloads and waypoints of one cause.
type Affected struct {
	Hosts, Clients, Workloads, Waypoints, Messages map[string]bool
}

// affected is the cause of d, added to u if new.
func (u Union) affected(d explain.Diagnostic) *Affected {
	k := check.Key(d)
	a := u[k]
	if a == nil {
		a = &Affected{Hosts: map[string]bool{}, Clients: map[string]bool{}, Workloads: map[string]bool{}, Waypoints: map[string]bool{}, Messages: map[string]bool{}}
		u[k] = a
	}
	a.Messages[d.Message] = true
	return a
}

// AddWaypoint records d from the answer for waypoint (`Gateway NS/NAME`).
func (u Union) AddWaypoint(d explain.Diagnostic, waypoint string) {
	u.affected(d).Waypoints[waypoint] = true
}

// Add records d from the answer for host as seen by client, or for workload.
func (u Union) Add(d explain.Diagnostic, host, client, workload string) {
	a := u.affected(d)
	if host != "" {
		a.Hosts[host] = true
	}
	if client != "" {
		a.Clients[client] = true
	}
	if workload != "" {
		a.Workloads[workload] = true
	}
}

// Compare fails t unless the findings of rep (silenced ones aside) are the causes of u, each
// with the same messages, hosts and workloads, and every client that reports it covered: named, or its
// namespace named (the class of the namespace default stands for the namespace).
func Compare(t testing.TB, name string, rep *explain.CheckReport, u Union) {
	t.Helper()
	got := map[string]explain.Finding{}
	for _, f := range rep.Findings {
		if f.Ignored == "" {
			got[check.Key(f.Diagnostic)] = f
		}
	}
	same := func(have []string, want map[string]bool) bool {
		return slices.Equal(have, slices.Sorted(maps.Keys(want))) || (len(have) == 0 && len(want) == 0)
	}
	for _, k := range slices.Sorted(maps.Keys(u)) {
		f, ok := got[k]
		if !ok {
			t.Errorf("%s: check misses %q", name, strings.ReplaceAll(k, "\x00", " | "))
			continue
		}
		a := u[k]
		if !same(f.Hosts, a.Hosts) {
			t.Errorf("%s: %s %s: hosts %v, want %v", name, f.ID, f.Message, f.Hosts, slices.Sorted(maps.Keys(a.Hosts)))
		}
		if !same(append([]string{f.Message}, f.Details...), a.Messages) {
			t.Errorf("%s: %s: messages %q, want %q", name, f.ID, append([]string{f.Message}, f.Details...), slices.Sorted(maps.Keys(a.Messages)))
		}
		if !same(f.Workloads, a.Workloads) {
			t.Errorf("%s: %s %s: workloads %v, want %v", name, f.ID, f.Message, f.Workloads, slices.Sorted(maps.Keys(a.Workloads)))
		}
		if !same(f.Waypoints, a.Waypoints) {
			t.Errorf("%s: %s %s: waypoints %v, want %v", name, f.ID, f.Message, f.Waypoints, slices.Sorted(maps.Keys(a.Waypoints)))
		}
		for c := range a.Clients {
			ns := strings.TrimPrefix(c, "Namespace ")
			if rest, ok := strings.CutPrefix(c, "Pod "); ok {
				ns, _, _ = strings.Cut(rest, "/")
			}
			if !slices.Contains(f.Clients, c) && !slices.Contains(f.Clients, "Namespace "+ns) {
				t.Errorf("%s: %s %s: client %s not among %v", name, f.ID, f.Message, c, f.Clients)
			}
		}
	}
	for k, f := range got {
		if _, ok := u[k]; !ok {
			t.Errorf("%s: check reports %s %q, which no per-host, per-workload or per-waypoint answer reports", name, f.ID, f.Message)
		}
	}
}

// sarifModule is the Go module whose source holds the SARIF 2.1.0 JSON schema (the schema
// const of its v210 package, which its own Validate uses).
const (
	sarifModule     = "github.com/owenrumney/go-sarif/v3"
	sarifSchemaFile = "pkg/report/v210/sarif/schema.go"
)

// SARIFSchema compiles the SARIF 2.1.0 JSON schema as the go-sarif module ships it, read from
// the module cache (`go list -m` finds the version this module requires), with the JSON
// schema validator github.com/santhosh-tekuri/jsonschema/v6, formats asserted.
func SARIFSchema(t testing.TB) *jsonschema.Schema {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", sarifModule).Output()
	if err != nil {
		t.Fatalf("finding %s in the module cache: %v", sarifModule, err)
	}
	path := filepath.Join(strings.TrimSpace(string(out)), sarifSchemaFile)
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var text string
	ast.Inspect(f, func(n ast.Node) bool {
		vs, ok := n.(*ast.ValueSpec)
		if !ok || len(vs.Names) != 1 || vs.Names[0].Name != "schema" || len(vs.Values) != 1 {
			return true
		}
		if lit, ok := vs.Values[0].(*ast.BasicLit); ok {
			text, err = strconv.Unquote(lit.Value)
		}
		return false
	})
	if err != nil || text == "" {
		t.Fatalf("no schema const in %s: %v", path, err)
	}
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	if title, _ := doc.(map[string]any)["title"].(string); !strings.Contains(title, "2.1.0") {
		t.Fatalf("%s is not the SARIF 2.1.0 schema: %q", path, title)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	const url = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
	if err := c.AddResource(url, doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile(url)
	if err != nil {
		t.Fatal(err)
	}
	return sch
}

// ValidateSARIF fails t unless data is a SARIF 2.1.0 log by the schema.
func ValidateSARIF(t testing.TB, sch *jsonschema.Schema, data []byte) {
	t.Helper()
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("not JSON: %v\n%s", err, data)
	}
	if err := sch.Validate(v); err != nil {
		t.Fatalf("not SARIF 2.1.0: %v\n%s", err, data)
	}
}
