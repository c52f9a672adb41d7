// Package compare compares the outputs of the tool with Istio's: Envoy JSON as parsed JSON,
// ztunnel YAML document by document, and reports the first differing paths.
package compare

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"
)

// MaxPaths is how many differing paths a comparison reports.
const MaxPaths = 8

// EnvoyJSON compares two `-o envoy` outputs as parsed JSON and returns the first differing
// paths (empty when equal). Array elements that carry a "name" are labelled with it.
func EnvoyJSON(got, want []byte) ([]string, error) {
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		return nil, fmt.Errorf("got: %v", err)
	}
	if err := json.Unmarshal(want, &w); err != nil {
		return nil, fmt.Errorf("want: %v", err)
	}
	return Diff(g, w), nil
}

// Diff returns the first MaxPaths paths at which two decoded JSON values differ.
func Diff(got, want any) []string {
	var out []string
	diff("$", got, want, &out)
	return out
}

func diff(path string, got, want any, out *[]string) {
	if len(*out) >= MaxPaths {
		return
	}
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			*out = append(*out, fmt.Sprintf("%s: got %s, want %s", path, short(got), short(want)))
			return
		}
		keys := map[string]bool{}
		for k := range g {
			keys[k] = true
		}
		for k := range w {
			keys[k] = true
		}
		sorted := make([]string, 0, len(keys))
		for k := range keys {
			sorted = append(sorted, k)
		}
		sort.Strings(sorted)
		for _, k := range sorted {
			gv, gok := g[k]
			wv, wok := w[k]
			p := path + "." + k
			switch {
			case !gok:
				*out = append(*out, fmt.Sprintf("%s: missing, want %s", p, short(wv)))
			case !wok:
				*out = append(*out, fmt.Sprintf("%s: unexpected %s", p, short(gv)))
			default:
				diff(p, gv, wv, out)
			}
			if len(*out) >= MaxPaths {
				return
			}
		}
	case []any:
		g, ok := got.([]any)
		if !ok {
			*out = append(*out, fmt.Sprintf("%s: got %s, want %s", path, short(got), short(want)))
			return
		}
		if gn, wn := names(g), names(w); gn != nil && wn != nil && !reflect.DeepEqual(gn, wn) {
			*out = append(*out, fmt.Sprintf("%s: names %q, want %q", path, gn, wn))
			return
		}
		n := len(g)
		if len(w) > n {
			n = len(w)
		}
		for i := 0; i < n; i++ {
			p := fmt.Sprintf("%s[%d]", path, i)
			if i < len(w) {
				if m, ok := w[i].(map[string]any); ok {
					if name, ok := m["name"].(string); ok {
						p = fmt.Sprintf("%s[%d](%s)", path, i, name)
					}
				}
			}
			switch {
			case i >= len(g):
				*out = append(*out, fmt.Sprintf("%s: missing, want %s", p, short(w[i])))
			case i >= len(w):
				*out = append(*out, fmt.Sprintf("%s: unexpected %s", p, short(g[i])))
			default:
				diff(p, g[i], w[i], out)
			}
			if len(*out) >= MaxPaths {
				return
			}
		}
	default:
		if !reflect.DeepEqual(got, want) {
			*out = append(*out, fmt.Sprintf("%s: got %s, want %s", path, short(got), short(want)))
		}
	}
}

// names returns the "name" of every element when all elements are objects with one.
func names(xs []any) []string {
	if len(xs) == 0 {
		return nil
	}
	out := make([]string, 0, len(xs))
	for _, x := range xs {
		m, ok := x.(map[string]any)
		if !ok {
			return nil
		}
		n, ok := m["name"].(string)
		if !ok {
			return nil
		}
		out = append(out, n)
	}
	return out
}

func short(v any) string {
	if v == nil {
		return "null"
	}
	b, _ := json.Marshal(v)
	s := string(b)
	if len(s) > 120 {
		s = s[:117] + "..."
	}
	return s
}

// SplitYAMLDocuments splits a `---`-separated YAML stream into its documents, each trimmed.
// A stream that is empty or only whitespace has no documents.
func SplitYAMLDocuments(b []byte) []string {
	if len(bytes.TrimSpace(b)) == 0 {
		return nil
	}
	var docs []string
	var cur strings.Builder
	for _, line := range strings.SplitAfter(string(b), "\n") {
		if strings.TrimRight(line, "\r\n") == "---" {
			docs = append(docs, strings.TrimSpace(cur.String()))
			cur.Reset()
			continue
		}
		cur.WriteString(line)
	}
	docs = append(docs, strings.TrimSpace(cur.String()))
	return docs
}

// ZtunnelYAML compares two `-o ztunnel` outputs document by document: documents that are only
// comments (`# missing: ns/name`) are compared as text, the others as parsed YAML with list
// order kept. It returns the differences, prefixed by the document index.
func ZtunnelYAML(got, want []byte) ([]string, error) {
	g, w := SplitYAMLDocuments(got), SplitYAMLDocuments(want)
	var out []string
	if len(g) != len(w) {
		out = append(out, fmt.Sprintf("got %d documents, want %d", len(g), len(w)))
	}
	n := min(len(g), len(w))
	for i := 0; i < n && len(out) < MaxPaths; i++ {
		if isComment(g[i]) || isComment(w[i]) {
			if g[i] != w[i] {
				out = append(out, fmt.Sprintf("doc[%d]: got %q, want %q", i, firstLine(g[i]), firstLine(w[i])))
			}
			continue
		}
		var gv, wv any
		if err := yaml.Unmarshal([]byte(g[i]), &gv); err != nil {
			return nil, fmt.Errorf("got doc[%d]: %v", i, err)
		}
		if err := yaml.Unmarshal([]byte(w[i]), &wv); err != nil {
			return nil, fmt.Errorf("want doc[%d]: %v", i, err)
		}
		for _, d := range Diff(gv, wv) {
			out = append(out, fmt.Sprintf("doc[%d]%s", i, strings.TrimPrefix(d, "$")))
		}
	}
	if len(out) > MaxPaths {
		out = out[:MaxPaths]
	}
	return out, nil
}

func isComment(doc string) bool {
	for _, l := range strings.Split(doc, "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			return false
		}
	}
	return true
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}

// SidecarEnvoyJSON compares two `-o envoy` outputs of a sidecar pod (its virtualInbound filter
// chains) as parsed JSON, after putting both in canonical form (CanonicalInbound).
func SidecarEnvoyJSON(got, want []byte) ([]string, error) {
	return canonicalDiff(got, want, CanonicalInbound)
}

// canonicalDiff parses two JSON outputs and returns the paths at which their canonical forms
// differ.
func canonicalDiff(got, want []byte, canonical func(any) any) ([]string, error) {
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		return nil, fmt.Errorf("got: %v", err)
	}
	if err := json.Unmarshal(want, &w); err != nil {
		return nil, fmt.Errorf("want: %v", err)
	}
	return Diff(canonical(g), canonical(w)), nil
}

// CanonicalInbound returns the canonical form of a decoded sidecar `-o envoy` array:
//
//   - The per-port passthrough chains (named `virtualInbound` or `virtualInbound-catchall-http`
//     with a filterChainMatch.destinationPort: istiod adds them for portLevelMtls ports that no
//     Service exposes) are sorted by port, keeping the positions they occupy and the order of
//     the chains of one port. istiod emits them in the iteration order of a Go map
//     (authn.Builder.ForPassthrough ranges over PortLevelSetting()), so their relative order is
//     not part of istiod's answer.
//   - An empty "filters" list is the same as none.
//
// Anything that is not such an array is returned as it is.
func CanonicalInbound(v any) any {
	chains, ok := v.([]any)
	if !ok {
		return v
	}
	out := make([]any, len(chains))
	copy(out, chains)
	var idx []int
	var sub []any
	for i, c := range out {
		m, ok := c.(map[string]any)
		if !ok {
			continue
		}
		m = withoutEmptyFilters(m)
		out[i] = m
		if _, ok := passthroughPort(m); ok {
			idx = append(idx, i)
			sub = append(sub, out[i])
		}
	}
	sort.SliceStable(sub, func(i, j int) bool {
		pi, _ := passthroughPort(sub[i].(map[string]any))
		pj, _ := passthroughPort(sub[j].(map[string]any))
		return pi < pj
	})
	for k, i := range idx {
		out[i] = sub[k]
	}
	return out
}

// passthroughPort returns the destination port of a per-port passthrough chain.
func passthroughPort(chain map[string]any) (float64, bool) {
	name, _ := chain["name"].(string)
	if name != "virtualInbound" && name != "virtualInbound-catchall-http" {
		return 0, false
	}
	m, _ := chain["filterChainMatch"].(map[string]any)
	p, ok := m["destinationPort"].(float64)
	return p, ok
}

// withoutEmptyFilters returns a chain without its "filters" key when that list is empty (a
// copy; the chain itself is not changed), else the chain.
func withoutEmptyFilters(chain map[string]any) map[string]any {
	f, ok := chain["filters"].([]any)
	if !ok || len(f) > 0 {
		return chain
	}
	out := make(map[string]any, len(chain))
	for k, x := range chain {
		if k != "filters" {
			out[k] = x
		}
	}
	return out
}

// WaypointEnvoyJSON compares two `-o envoy` outputs of a waypoint (the filter chains of its
// main_internal listener) as parsed JSON, after putting both in canonical form
// (CanonicalWaypoint).
func WaypointEnvoyJSON(got, want []byte) ([]string, error) {
	return canonicalDiff(got, want, CanonicalWaypoint)
}

// CanonicalWaypoint returns the canonical form of a decoded waypoint `-o envoy` array: an
// empty "filters" list is the same as none. Every chain keeps istiod's position: istiod orders
// a waypoint's services by creation time, then hostname (findWaypointResources in
// pilot/pkg/networking/core/waypoint.go, model.SortServicesByCreationTime), so that order is
// stable. Anything that is not such an array is returned as it is.
func CanonicalWaypoint(v any) any {
	chains, ok := v.([]any)
	if !ok {
		return v
	}
	out := make([]any, len(chains))
	for i, c := range chains {
		if m, ok := c.(map[string]any); ok {
			out[i] = withoutEmptyFilters(m)
		} else {
			out[i] = c
		}
	}
	return out
}
