// Package scenariogen generates random, seeded scenario folders (inputs and an args line) for the
// cluster and authz commands (authz on ambient and on sidecar workloads, and on ambient
// waypoints), and shrinks a scenario while a property still holds.
//
// The generator aims at valid configuration: every scenario is meant to be checked with
// Istio's validation by the caller, which drops the invalid ones.
package scenariogen

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"sigs.k8s.io/yaml"
)

// Scenario is one generated scenario: its documents and its command line.
type Scenario struct {
	Seed    uint64
	Kind    string // "cluster", "authz", "sidecar" or "waypoint"
	Title   string
	Command string
	Docs    []map[string]any
}

// Write writes the scenario as a folder: `args` and `inputs.yaml`.
func (s *Scenario) Write(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	args := fmt.Sprintf("# %s\n%s\n", s.Title, s.Command)
	if err := os.WriteFile(filepath.Join(dir, "args"), []byte(args), 0o644); err != nil {
		return err
	}
	y, err := s.YAML()
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "inputs.yaml"), y, 0o644)
}

// YAML returns the documents as one multi-document YAML stream.
func (s *Scenario) YAML() ([]byte, error) {
	var b strings.Builder
	for i, d := range s.Docs {
		if i > 0 {
			b.WriteString("---\n")
		}
		y, err := yaml.Marshal(d)
		if err != nil {
			return nil, err
		}
		b.Write(y)
	}
	return []byte(b.String()), nil
}

// JSON returns the documents as a stream of JSON objects, one per line: what YAML returns, for
// loaders that read JSON faster (the fuzz targets).
func (s *Scenario) JSON() ([]byte, error) {
	var b bytes.Buffer
	for _, d := range s.Docs {
		j, err := json.Marshal(d)
		if err != nil {
			return nil, err
		}
		b.Write(j)
		b.WriteByte('\n')
	}
	return b.Bytes(), nil
}

// Clone returns a deep copy.
func (s *Scenario) Clone() *Scenario {
	c := *s
	c.Docs = make([]map[string]any, len(s.Docs))
	for i, d := range s.Docs {
		c.Docs[i] = deepCopy(d).(map[string]any)
	}
	return &c
}

func deepCopy(v any) any {
	switch t := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(t))
		for k, x := range t {
			m[k] = deepCopy(x)
		}
		return m
	case []any:
		l := make([]any, len(t))
		for i, x := range t {
			l[i] = deepCopy(x)
		}
		return l
	}
	return v
}

// g is a random source with helpers.
type g struct{ r *rand.Rand }

func newG(seed uint64, stream uint64) *g {
	return &g{r: rand.New(rand.NewPCG(seed, stream))}
}

func (g *g) chance(p float64) bool { return g.r.Float64() < p }
func (g *g) intn(n int) int        { return g.r.IntN(n) }
func (g *g) between(lo, hi int) int {
	return lo + g.r.IntN(hi-lo+1)
}

func pick[T any](g *g, xs ...T) T { return xs[g.r.IntN(len(xs))] }

// some returns between lo and hi distinct elements of xs, in xs order.
func some[T any](g *g, lo, hi int, xs ...T) []T {
	n := g.between(lo, min(hi, len(xs)))
	idx := g.r.Perm(len(xs))[:n]
	sort.Ints(idx)
	out := make([]T, 0, n)
	for _, i := range idx {
		out = append(out, xs[i])
	}
	return out
}

func anyList[T any](xs []T) []any {
	out := make([]any, len(xs))
	for i, x := range xs {
		out[i] = x
	}
	return out
}

func (g *g) duration(choices ...string) string { return pick(g, choices...) }

var baseTime = time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)

// timestamps returns n distinct creation timestamps in random order.
func (g *g) timestamps(n int) []string {
	perm := g.r.Perm(max(n, 1) * 3)
	out := make([]string, n)
	for i := range out {
		out[i] = baseTime.Add(time.Duration(perm[i]) * time.Minute).Format(time.RFC3339)
	}
	return out
}

func meta(name, ns string, extra ...any) map[string]any {
	m := map[string]any{"name": name}
	if ns != "" {
		m["namespace"] = ns
	}
	for i := 0; i+1 < len(extra); i += 2 {
		m[extra[i].(string)] = extra[i+1]
	}
	return m
}

// meshConfigDoc is the ConfigMap istio-system/istio holding MeshConfig under the key mesh.
func meshConfigDoc(mesh string) map[string]any {
	return map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": meta("istio", "istio-system"),
		"data":     map[string]any{"mesh": mesh},
	}
}

func namespaceDoc(name string, labels map[string]any) map[string]any {
	m := meta(name, "")
	if len(labels) > 0 {
		m["labels"] = labels
	}
	return map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": m}
}

type containerPort struct {
	Name string
	Port int
}

func podDoc(name, ns, ip string, labels map[string]any, ports []containerPort, ready bool, sa string) map[string]any {
	var cps []any
	for _, p := range ports {
		cp := map[string]any{"containerPort": p.Port}
		if p.Name != "" {
			cp["name"] = p.Name
		}
		cps = append(cps, cp)
	}
	c := map[string]any{"name": "app", "image": "example.com/" + name + ":1"}
	if len(cps) > 0 {
		c["ports"] = cps
	}
	spec := map[string]any{"containers": []any{c}}
	if sa != "" {
		spec["serviceAccountName"] = sa
	}
	status := map[string]any{"phase": "Running", "podIP": ip}
	readyStr := "True"
	if !ready {
		readyStr = "False"
	}
	status["conditions"] = []any{map[string]any{"type": "Ready", "status": readyStr}}
	m := meta(name, ns)
	if labels != nil {
		m["labels"] = labels
	}
	return map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": m, "spec": spec, "status": status}
}

// Kinds are the kinds Generate makes, in the order the fuzz targets index them (a corpus
// entry's kind byte picks Kinds[k % len(Kinds)]): a host with its rules, an ambient pod, a pod
// with a sidecar, a waypoint.
var Kinds = []string{"cluster", "authz", "sidecar", "waypoint"}

// Generate returns the scenario of a kind for a seed.
func Generate(kind string, seed uint64) *Scenario {
	switch kind {
	case "authz":
		return Authz(seed)
	case "sidecar":
		return Sidecar(seed)
	case "waypoint":
		return Waypoint(seed)
	}
	return Cluster(seed)
}
