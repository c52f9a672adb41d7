package compare

import (
	"fmt"
	"strings"
	"testing"
)

func TestEnvoyJSON(t *testing.T) {
	want := `[{"name":"outbound|80||a","connectTimeout":"10s","circuitBreakers":{"thresholds":[{"maxRetries":3}]}},{"name":"outbound|80|v1|a"}]`
	cases := []struct {
		name, got string
		diff      string // a substring of the first difference; "" for none
	}{
		{"equal, other key order and spacing", `[ {"connectTimeout":"10s","name":"outbound|80||a","circuitBreakers":{"thresholds":[{"maxRetries":3}]}}, {"name":"outbound|80|v1|a"} ]`, ""},
		{"nested value", `[{"name":"outbound|80||a","connectTimeout":"10s","circuitBreakers":{"thresholds":[{"maxRetries":4}]}},{"name":"outbound|80|v1|a"}]`, "$[0](outbound|80||a).circuitBreakers.thresholds[0].maxRetries: got 4, want 3"},
		{"missing field", `[{"name":"outbound|80||a","circuitBreakers":{"thresholds":[{"maxRetries":3}]}},{"name":"outbound|80|v1|a"}]`, "connectTimeout: missing"},
		{"extra field", `[{"name":"outbound|80||a","connectTimeout":"10s","lbPolicy":"RANDOM","circuitBreakers":{"thresholds":[{"maxRetries":3}]}},{"name":"outbound|80|v1|a"}]`, "lbPolicy: unexpected"},
		{"cluster missing", `[{"name":"outbound|80||a","connectTimeout":"10s","circuitBreakers":{"thresholds":[{"maxRetries":3}]}}]`, "names"},
		{"empty", `[]`, "missing"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d, err := EnvoyJSON([]byte(c.got), []byte(want))
			if err != nil {
				t.Fatal(err)
			}
			if c.diff == "" {
				if len(d) != 0 {
					t.Fatalf("want no difference, got %q", d)
				}
				return
			}
			if len(d) == 0 || !strings.Contains(d[0], c.diff) {
				t.Fatalf("want a first difference containing %q, got %q", c.diff, d)
			}
		})
	}
	if _, err := EnvoyJSON([]byte("[{"), []byte(want)); err == nil {
		t.Fatal("malformed JSON compared without error")
	}
}

func TestZtunnelYAML(t *testing.T) {
	want := "action: DENY\ngroups:\n- rules:\n  - matches:\n    - notPrincipals:\n      - presence: {}\nname: s\nnamespace: istio-system\n---\n# missing: foo/p\n"
	cases := []struct {
		name, got string
		diff      string
	}{
		{"equal, keys reordered", "name: s\nnamespace: istio-system\naction: DENY\ngroups:\n- rules:\n  - matches:\n    - notPrincipals:\n      - presence: {}\n---\n# missing: foo/p\n", ""},
		{"other missing key", strings.Replace(want, "foo/p", "foo/q", 1), "doc[1]"},
		{"one document", "# missing: foo/p\n", "got 1 documents, want 2"},
		{"value", strings.Replace(want, "DENY", "ALLOW", 1), "doc[0].action: got \"ALLOW\", want \"DENY\""},
		{"list order kept", "action: DENY\ngroups:\n- rules:\n  - matches:\n    - notPrincipals:\n      - presence: {}\n      - exact: x\nname: s\nnamespace: istio-system\n---\n# missing: foo/p\n", "notPrincipals[1]: unexpected"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d, err := ZtunnelYAML([]byte(c.got), []byte(want))
			if err != nil {
				t.Fatal(err)
			}
			if c.diff == "" {
				if len(d) != 0 {
					t.Fatalf("want no difference, got %q", d)
				}
				return
			}
			if len(d) == 0 || !strings.Contains(strings.Join(d, "\n"), c.diff) {
				t.Fatalf("want a difference containing %q, got %q", c.diff, d)
			}
		})
	}
	if d, _ := ZtunnelYAML(nil, []byte(" \n")); len(d) != 0 {
		t.Fatalf("empty outputs differ: %q", d)
	}
}

func TestSidecarEnvoyJSONPassthroughOrder(t *testing.T) {
	chain := func(name string, port int, extra string) string {
		m := `{}`
		if port > 0 {
			m = fmt.Sprintf(`{"destinationPort":%d}`, port)
		}
		return fmt.Sprintf(`{"name":%q,"filterChainMatch":%s%s}`, name, m, extra)
	}
	// The blackhole, the catch-all chains, then per-port passthrough chains of 7072 and 7070
	// (a TLS and a plaintext chain each), then a Service port's chain.
	got := "[" + strings.Join([]string{
		chain("virtualInbound-blackhole", 15006, ""),
		chain("virtualInbound", 0, ""),
		chain("virtualInbound", 7072, `,"transportSocket":{}`),
		chain("virtualInbound", 7072, ""),
		chain("virtualInbound", 7070, `,"transportSocket":{}`),
		chain("virtualInbound", 7070, `,"filters":[]`),
		chain("0.0.0.0_8080", 8080, ""),
	}, ",") + "]"
	want := "[" + strings.Join([]string{
		chain("virtualInbound-blackhole", 15006, ""),
		chain("virtualInbound", 0, ""),
		chain("virtualInbound", 7070, `,"transportSocket":{}`),
		chain("virtualInbound", 7070, ""),
		chain("virtualInbound", 7072, `,"transportSocket":{}`),
		chain("virtualInbound", 7072, ""),
		chain("0.0.0.0_8080", 8080, ""),
	}, ",") + "]"
	if d, err := SidecarEnvoyJSON([]byte(got), []byte(want)); err != nil || len(d) > 0 {
		t.Fatalf("the per-port passthrough groups in another order should compare equal: %v %v", d, err)
	}
	// Within one port, istiod's order (TLS chain first) stays significant, and so does the
	// position of any other chain.
	swapped := strings.Replace(want, chain("virtualInbound", 7070, `,"transportSocket":{}`)+","+chain("virtualInbound", 7070, ""),
		chain("virtualInbound", 7070, "")+","+chain("virtualInbound", 7070, `,"transportSocket":{}`), 1)
	if d, _ := SidecarEnvoyJSON([]byte(swapped), []byte(want)); len(d) == 0 {
		t.Fatal("the chains of one port in another order should differ")
	}
	moved := strings.Replace(want, chain("0.0.0.0_8080", 8080, ""), chain("virtualInbound", 0, `,"x":1`), 1)
	if d, err := SidecarEnvoyJSON([]byte(moved), []byte(want)); err != nil || len(d) == 0 {
		t.Fatal("a different chain should differ")
	}
}
