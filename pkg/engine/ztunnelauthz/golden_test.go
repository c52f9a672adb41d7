package ztunnelauthz

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	securityv1 "istio.io/client-go/pkg/apis/security/v1"
	k8syaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// repoRoot walks up from the package directory to the module root (the directory with go.mod).
func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("go.mod not found above the test directory")
		}
		dir = parent
	}
}

// yamlDocs splits a YAML (or JSON) multi-document stream into JSON documents, skipping empty
// ones, with the 1-based line each document starts on.
func yamlDocs(data []byte) ([][]byte, []int, error) {
	r := k8syaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var docs [][]byte
	var lines []int
	line := 1
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return docs, lines, nil
		}
		if err != nil {
			return nil, nil, err
		}
		start := line
		line += bytes.Count(doc, []byte("\n"))
		js, err := yaml.YAMLToJSON(doc)
		if err != nil {
			return nil, nil, err
		}
		if t := strings.TrimSpace(string(js)); t == "null" || t == "" {
			continue
		}
		// Point at the first non-separator, non-blank line of the document.
		for _, l := range strings.Split(string(doc), "\n") {
			if s := strings.TrimSpace(l); s != "" && s != "---" && !strings.HasPrefix(s, "#") {
				break
			}
			start++
		}
		docs = append(docs, js)
		lines = append(lines, start)
	}
}

type typeMeta struct {
	Kind string `json:"kind"`
}

// TestRBACConvertGoldens replays Istio's own golden pairs (shared/conformance/ambient) the way
// pilot/pkg/serviceregistry/ambient/ambientindex_test.go TestRBACConvert does: every
// `*-in.yaml`, golden name with every "-in" removed, the first document's kind picks the
// branch, only name, namespace and spec are passed on, PeerAuthentication parents classified
// by the harness itself, nil printed as "", both sides compared after strings.TrimSpace.
func TestRBACConvertGoldens(t *testing.T) {
	dir := filepath.Join(repoRoot(t), "..", "shared", "conformance", "ambient")
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatalf("reading the golden pairs: %v", err)
	}
	const systemNS = "istio-system"
	ran := 0
	for _, e := range entries {
		name := e.Name()
		if !strings.Contains(name, "-in.yaml") {
			continue
		}
		ran++
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join(dir, name))
			if err != nil {
				t.Fatal(err)
			}
			docs, _, err := yamlDocs(data)
			if err != nil || len(docs) == 0 {
				t.Fatalf("parsing %s: %v (%d documents)", name, err, len(docs))
			}
			var tm typeMeta
			if err := json.Unmarshal(docs[0], &tm); err != nil {
				t.Fatal(err)
			}
			var got *Authorization
			switch tm.Kind {
			case "AuthorizationPolicy":
				var ap securityv1.AuthorizationPolicy
				if err := json.Unmarshal(docs[0], &ap); err != nil {
					t.Fatal(err)
				}
				got, _ = ConvertAuthorizationPolicy(systemNS, stripAP(&ap))
			case "PeerAuthentication":
				var pas []*securityv1.PeerAuthentication
				for _, d := range docs {
					pa := &securityv1.PeerAuthentication{}
					if err := json.Unmarshal(d, pa); err != nil {
						t.Fatal(err)
					}
					pas = append(pas, pa)
				}
				if len(pas) == 1 {
					got = ConvertPeerAuthentication(systemNS, stripPA(pas[0]), nil, nil)
					break
				}
				var root, ns, wl *securityv1.PeerAuthentication
				for _, p := range pas {
					switch {
					case p.Namespace == systemNS:
						if p.Spec.GetSelector() != nil {
							t.Fatalf("unexpected selector in mesh-level policy %s", p.Name)
						}
						if root == nil || p.CreationTimestamp.Before(&root.CreationTimestamp) {
							root = p
						}
					case p.Spec.GetSelector() != nil:
						if wl != nil {
							t.Fatalf("multiple workload-level policies %s and %s", p.Name, wl.Name)
						}
						wl = p
					case ns == nil || p.CreationTimestamp.Before(&ns.CreationTimestamp):
						ns = p
					}
				}
				if wl == nil {
					// The harness passes the namespace policy as the converted object.
					wl, ns = ns, nil
				}
				if wl == nil {
					wl, root = root, nil
				}
				got = ConvertPeerAuthentication(systemNS, stripPA(wl), stripPA(ns), stripPA(root))
			default:
				t.Fatalf("unknown kind %q", tm.Kind)
			}
			msg := ""
			if got != nil {
				y, err := got.YAML()
				if err != nil {
					t.Fatal(err)
				}
				msg = string(y)
			}
			goldenName := strings.ReplaceAll(name, "-in", "")
			want, err := os.ReadFile(filepath.Join(dir, goldenName))
			if err != nil {
				t.Fatal(err)
			}
			if strings.TrimSpace(msg) != strings.TrimSpace(string(want)) {
				t.Errorf("%s differs from %s\n--- got\n%s\n--- want\n%s", name, goldenName, msg, want)
			}
		})
	}
	if ran != 22 {
		t.Errorf("found %d golden inputs, want 22", ran)
	}
}

// stripAP and stripPA keep only what Istio's harness passes on: name, namespace and spec.
func stripAP(ap *securityv1.AuthorizationPolicy) *securityv1.AuthorizationPolicy {
	out := &securityv1.AuthorizationPolicy{}
	out.Name, out.Namespace = ap.Name, ap.Namespace
	ap.Spec.DeepCopyInto(&out.Spec)
	return out
}

func stripPA(pa *securityv1.PeerAuthentication) *securityv1.PeerAuthentication {
	if pa == nil {
		return nil
	}
	out := &securityv1.PeerAuthentication{}
	out.Name, out.Namespace = pa.Name, pa.Namespace
	pa.Spec.DeepCopyInto(&out.Spec)
	return out
}
