package scenariogen

import (
	"bytes"
	"strings"
	"testing"
)

func TestGenerateIsDeterministic(t *testing.T) {
	for _, kind := range Kinds {
		for seed := uint64(1); seed < 50; seed++ {
			a, _ := Generate(kind, seed).YAML()
			b, _ := Generate(kind, seed).YAML()
			if !bytes.Equal(a, b) {
				t.Fatalf("%s seed %d: two generations differ", kind, seed)
			}
			verb := kind
			if kind == "sidecar" || kind == "waypoint" {
				verb = "authz"
			}
			if c := Generate(kind, seed).Command; !strings.HasPrefix(c, verb+" ") {
				t.Fatalf("%s seed %d: command %q", kind, seed, c)
			}
		}
	}
	a, _ := Generate("cluster", 1).YAML()
	b, _ := Generate("cluster", 2).YAML()
	if bytes.Equal(a, b) {
		t.Fatal("seeds 1 and 2 generate the same scenario")
	}
}

func TestShrink(t *testing.T) {
	s := &Scenario{Kind: "cluster", Docs: []map[string]any{
		{"kind": "A", "spec": map[string]any{"keep": 1, "drop": map[string]any{"x": []any{1, 2, 3}}}},
		{"kind": "B", "spec": map[string]any{"y": 2}},
		{"kind": "C", "spec": map[string]any{"list": []any{"a", "needle", "b"}}},
	}}
	// The property: some document has spec.keep and some list holds "needle".
	fails := func(c *Scenario) bool {
		keep, needle := false, false
		for _, d := range c.Docs {
			sp, _ := d["spec"].(map[string]any)
			if _, ok := sp["keep"]; ok {
				keep = true
			}
			if l, ok := sp["list"].([]any); ok {
				for _, v := range l {
					needle = needle || v == "needle"
				}
			}
		}
		return keep && needle
	}
	small := Shrink(s, fails, 200)
	if !fails(small) {
		t.Fatal("the shrunk scenario lost the property")
	}
	y, _ := small.YAML()
	want := "kind: A\nspec:\n  keep: 1\n---\nkind: C\nspec:\n  list:\n  - needle\n"
	if string(y) != want {
		t.Fatalf("shrunk to\n%s\nwant\n%s", y, want)
	}
	if len(s.Docs) != 3 {
		t.Fatal("Shrink modified its input")
	}
}

// TestClusterScenariosHoldEveryKind: over the first 200 seeds, the cluster generator emits
// every kind the cluster answer reads or must be unmoved by, and every ServiceEntry
// resolution, with and without WorkloadEntries.
func TestClusterScenariosHoldEveryKind(t *testing.T) {
	seen := map[string]int{}
	for seed := uint64(1); seed <= 200; seed++ {
		s := Generate("cluster", seed)
		hasWE := false
		for _, d := range s.Docs {
			hasWE = hasWE || d["kind"] == "WorkloadEntry"
		}
		for _, d := range s.Docs {
			kind, _ := d["kind"].(string)
			seen[kind]++
			if kind == "ServiceEntry" {
				spec := d["spec"].(map[string]any)
				seen["resolution "+spec["resolution"].(string)]++
				if _, ok := spec["workloadSelector"]; ok && hasWE {
					seen["ServiceEntry selecting WorkloadEntries"]++
				}
			}
		}
	}
	for _, want := range []string{"Service", "ServiceEntry", "DestinationRule", "VirtualService", "Sidecar", "WorkloadEntry",
		"EnvoyFilter", "PeerAuthentication", "ConfigMap", "resolution STATIC", "resolution DNS", "resolution DNS_ROUND_ROBIN",
		"resolution NONE", "ServiceEntry selecting WorkloadEntries"} {
		if seen[want] == 0 {
			t.Errorf("no %s in 200 cluster scenarios (seen: %v)", want, seen)
		}
	}
}

// TestWaypointCoversEveryAttachment checks that the waypoint generator, over 300 seeds, binds
// at namespace, Service, ServiceEntry, pod and cross-namespace level, leaves a Gateway without
// status.addresses, attaches policies by every targetRef kind (GatewayClass from the root
// namespace and from elsewhere), by selector and by nothing, and uses every action.
func TestWaypointCoversEveryAttachment(t *testing.T) {
	seen := map[string]bool{}
	for seed := uint64(1); seed <= 300; seed++ {
		for _, d := range Generate("waypoint", seed).Docs {
			kind, _ := d["kind"].(string)
			m, _ := d["metadata"].(map[string]any)
			labels, _ := m["labels"].(map[string]any)
			ns, _ := m["namespace"].(string)
			spec, _ := d["spec"].(map[string]any)
			if labels["istio.io/use-waypoint"] == "waypoint" {
				seen["bind:"+kind] = true
				if labels["istio.io/use-waypoint-namespace"] != nil {
					seen["bind-namespace:"+kind] = true
				}
			}
			switch kind {
			case "Gateway":
				if d["status"] == nil {
					seen["gateway-without-addresses"] = true
				}
			case "AuthorizationPolicy":
				action, _ := spec["action"].(string)
				seen["action:"+action] = true
				refs, _ := spec["targetRefs"].([]any)
				for _, r := range refs {
					k := r.(map[string]any)["kind"].(string)
					if k == "GatewayClass" {
						k += "@" + ns
					}
					seen["targetRef:"+k] = true
				}
				switch {
				case spec["selector"] != nil:
					seen["selector"] = true
				case refs == nil:
					seen["namespace-wide"] = true
				}
			}
		}
	}
	for _, want := range []string{
		"bind:Namespace", "bind:Service", "bind:ServiceEntry", "bind:Pod", "bind-namespace:Service", "bind-namespace:Namespace",
		"gateway-without-addresses",
		"action:", "action:ALLOW", "action:DENY", "action:AUDIT", "action:CUSTOM",
		"targetRef:Gateway", "targetRef:Service", "targetRef:ServiceEntry",
		"targetRef:GatewayClass@istio-system", "targetRef:GatewayClass@foo",
		"selector", "namespace-wide",
	} {
		if !seen[want] {
			t.Errorf("300 waypoint scenarios never have %s", want)
		}
	}
}

func TestMutate(t *testing.T) {
	base := func() *Scenario {
		return &Scenario{Docs: []map[string]any{
			{"kind": "A", "metadata": map[string]any{"name": "a", "namespace": "foo"}},
			{"kind": "B", "metadata": map[string]any{"name": "b", "namespace": "bar"}, "spec": map[string]any{"n": 1}},
		}}
	}
	tests := []struct {
		name  string
		edits []byte
		want  string
	}{
		{"no edits", nil, `{"kind":"A","metadata":{"name":"a","namespace":"foo"}}` + "\n" + `{"kind":"B","metadata":{"name":"b","namespace":"bar"},"spec":{"n":1}}` + "\n"},
		{"drop the second", []byte{0, 1}, `{"kind":"A","metadata":{"name":"a","namespace":"foo"}}` + "\n"},
		{"copy the first", []byte{1, 0}, `{"kind":"A","metadata":{"name":"a","namespace":"foo"}}` + "\n" + `{"kind":"B","metadata":{"name":"b","namespace":"bar"},"spec":{"n":1}}` + "\n" + `{"kind":"A","metadata":{"name":"a","namespace":"foo"}}` + "\n"},
		// The paths of A: kind, metadata, metadata.name, metadata.namespace.
		{"set metadata.name of A to Values[3]", []byte{2, 0, 2, 3}, `{"kind":"A","metadata":{"name":-1,"namespace":"foo"}}` + "\n" + `{"kind":"B","metadata":{"name":"b","namespace":"bar"},"spec":{"n":1}}` + "\n"},
		{"delete metadata of A", []byte{3, 0, 1}, `{"kind":"A"}` + "\n" + `{"kind":"B","metadata":{"name":"b","namespace":"bar"},"spec":{"n":1}}` + "\n"},
		{"move B to foo", []byte{4, 1, 0}, `{"kind":"A","metadata":{"name":"a","namespace":"foo"}}` + "\n" + `{"kind":"B","metadata":{"name":"b","namespace":"foo"},"spec":{"n":1}}` + "\n"},
		{"move A to no namespace", []byte{4, 0, 2}, `{"kind":"A","metadata":{"name":"a"}}` + "\n" + `{"kind":"B","metadata":{"name":"b","namespace":"bar"},"spec":{"n":1}}` + "\n"},
		// The paths of B: kind, metadata, metadata.name, metadata.namespace, spec, spec.n.
		{"copy A's namespace to B's spec.n", []byte{5, 1, 5, 0, 3}, `{"kind":"A","metadata":{"name":"a","namespace":"foo"}}` + "\n" + `{"kind":"B","metadata":{"name":"b","namespace":"bar"},"spec":{"n":"foo"}}` + "\n"},
		{"operands wrap around", []byte{6, 3}, `{"kind":"A","metadata":{"name":"a","namespace":"foo"}}` + "\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := base()
			s.Mutate(tt.edits)
			got, err := s.JSON()
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("got\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
	// Every edit of every generated scenario leaves documents the YAML writer takes.
	for seed := uint64(1); seed < 40; seed++ {
		s := Generate("sidecar", seed)
		s.Mutate([]byte{2, byte(seed), byte(seed * 7), byte(seed * 3), 5, 0, byte(seed), 1, byte(seed * 5), 0, 0})
		if _, err := s.YAML(); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
	}
}
