package cli

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mesh-explain/kubectl-mesh-explain/internal/testkit"
)

// TestValuesTheWebhookRejectsAreReported runs the values of issue 23 that the admission
// webhook rejects (connectTimeout -5s, maxConnections -1, an AuthorizationPolicy port "abc",
// an ipBlock "not-a-cidr") through Main from files: each answer carries a diagnostic naming the
// field and quoting Istio's validation error. Before pkg/webhook they loaded without a word.
func TestValuesTheWebhookRejectsAreReported(t *testing.T) {
	t.Chdir(repoRoot(t))
	for _, tc := range []struct {
		dir, id, field, webhook string
	}{
		{"cluster/bad-input-connect-timeout-negative", "D33", "spec.trafficPolicy.connectionPool.tcp.connectTimeout", `\"duration must be greater than 1ms\"`},
		{"cluster/bad-input-max-connections-negative", "D33", "spec.trafficPolicy.connectionPool.tcp.maxConnections", `\"max connections must be non-negative\"`},
		{"cluster/bad-input-subset-name-not-a-label", "D33", "spec.subsets[0].name", `\"subset name is invalid: v1.0\"`},
		{"cluster/bad-input-serviceentry-host-underscore", "D33", "spec.hosts[0]", `\"domain name \\\"api_v1.example.com\\\" invalid (label \\\"api_v1\\\" invalid)\"`},
		{"cluster/bad-input-serviceentry-host-underscore", "D33", "spec.host", `\"domain name \\\"api_v1.example.com\\\" invalid (label \\\"api_v1\\\" invalid)\"`},
		{"cluster/bad-input-virtualservice-weight-negative", "D33", "spec.http[0].route[0].weight", `\"weight -10 \u003c 0\"`},
		{"cluster/bad-input-sidecar-egress-host-short-name", "D33", "spec.egress[0].hosts[0]", `\"short names (non FQDN) are not allowed\"`},
		{"sidecar/bad-input-requestauthn-audience-empty", "S18", "spec.jwtRules[0].audiences[1]", `\"audience must be non-empty string\"`},
		{"cluster/bad-input-workloadentry-label-value", "D33", "spec.labels", `\"invalid tag value: \\\"1.0 beta\\\"\"`},
		{"cluster/bad-input-envoyfilter-patch-value", "D33", "spec.configPatches[0].patch.value", `\"Envoy filter: bad Duration: time: invalid duration \\\"soon\\\"\"`},
		{"cluster/bad-input-dr-host-underscore", "D33", "spec.host", `\"domain name \\\"my_app.default.svc.cluster.local\\\" invalid (label \\\"my_app\\\" invalid)\"`},
		{"sidecar/bad-input-port-not-a-number", "S18", "spec.rules[0].to[0].operation.ports[0]", `\"invalid policy bad.foo: bad port (abc): strconv.ParseUint: parsing \\\"abc\\\": invalid syntax\"`},
		{"authz/bad-input-port-not-a-number", "A25", "spec.rules[0].to[0].operation.ports[0]", `\"invalid policy bad.foo: bad port (abc): strconv.ParseUint: parsing \\\"abc\\\": invalid syntax\"`},
		{"authz/bad-input-when-source-ip-not-an-ip", "A25", "spec.rules[0].when[0].values", "\\\"invalid policy bad.foo: invalid `value` for `key` source.ip: 1 error occurred:\\\\n\\\\t* bad IP address (not-an-ip)\\\\n\\\\n\\\""},
		{"sidecar/bad-input-ipblock-not-a-cidr", "S18", "spec.rules[0].from[0].source.ipBlocks[0]", `\"invalid policy bad.foo: bad IP address (not-a-cidr)\"`},
		{"authz/bad-input-ipblock-not-a-cidr", "A25", "spec.rules[0].from[0].source.ipBlocks[0]", `\"invalid policy bad.foo: bad IP address (not-a-cidr)\"`},
	} {
		t.Run(tc.dir, func(t *testing.T) {
			dir := filepath.Join("testdata", "scenarios", tc.dir)
			args := append(scenarioArgs(t, dir), "-f", dir, "-o", "json")
			r := runMain(t, "", args...)
			if r.code != ExitOK {
				t.Fatalf("%s\n%s", strings.Join(args, " "), r)
			}
			msgs, err := testkit.DiagnosticMessages([]byte(r.stdout), tc.id)
			if err != nil {
				t.Fatal(err)
			}
			want := tc.field + ": Istio's validation rejects "
			found := slices.ContainsFunc(msgs, func(m string) bool {
				b, _ := json.Marshal(m)
				return strings.HasPrefix(m, want) && strings.Contains(string(b), tc.webhook)
			})
			if !found {
				t.Errorf("no %s diagnostic on %s quoting %s:\n%s", tc.id, tc.field, tc.webhook, r.stdout)
			}
		})
	}
}
