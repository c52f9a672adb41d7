package source

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func loadStdin(t *testing.T, in string) ([]string, []issue) {
	t.Helper()
	snap, err := load(t.Context(), Spec{Files: []string{"-"}, Stdin: strings.NewReader(in)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return keys(snap), issues(snap)
}

func TestYAMLSyntaxErrorNamesTheObject(t *testing.T) {
	in := `apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata:
  name: reviews
  namespace: bookinfo
spec:
  host: reviews
  trafficPolicy:
    connectionPool:
      tcp: {maxConnections: [100}
---
apiVersion: v1
kind: Service
metadata: {name: after}
`
	got, iss := loadStdin(t, in)
	if diff := cmp.Diff([]string{"Service default/after"}, got); diff != "" {
		t.Errorf("objects (-want +got):\n%s", diff)
	}
	want := []issue{{
		Severity: "error", Resource: "DestinationRule bookinfo/reviews", Position: "<stdin>:9",
		Message: "invalid YAML: did not find expected ',' or ']'; the object is skipped",
	}}
	if diff := cmp.Diff(want, iss); diff != "" {
		t.Errorf("issues (-want +got):\n%s", diff)
	}
}

func TestYAMLSyntaxErrorInTheHeaderStillNamesWhatItCan(t *testing.T) {
	// The scan refuses the document (a flow mapping does not close), the lenient reading of
	// its lines still finds the kind and name.
	in := "apiVersion: networking.istio.io/v1\nkind: DestinationRule\nmetadata:\n  name: reviews\n  labels: {a: [b}\nspec: {host: reviews}\n"
	_, iss := loadStdin(t, in)
	if len(iss) != 1 || iss[0].Resource != "DestinationRule default/reviews" || iss[0].Position != "<stdin>:4" {
		t.Errorf("issues = %+v, want one naming DestinationRule default/reviews at <stdin>:4", iss)
	}
}

func TestJSONSyntaxErrorNamesTheObjectAndKeepsTheLaterOnes(t *testing.T) {
	in := `{
  "apiVersion": "networking.istio.io/v1",
  "kind": "DestinationRule",
  "metadata": {"name": "reviews", "namespace": "bookinfo"},
  "spec": {"host": "reviews", "trafficPolicy": {"connectionPool": {"tcp": {"maxConnections": [100}}}}
}
{
  "apiVersion": "v1",
  "kind": "Service",
  "metadata": {"name": "after", "namespace": "bookinfo"}
}
{"apiVersion": "v1", "kind": "Service", "metadata": {"name": "last", "namespace": "bookinfo"}}
`
	got, iss := loadStdin(t, in)
	if diff := cmp.Diff([]string{"Service bookinfo/after", "Service bookinfo/last"}, got); diff != "" {
		t.Errorf("objects (-want +got):\n%s", diff)
	}
	want := []issue{{
		Severity: "error", Resource: "DestinationRule bookinfo/reviews", Position: "<stdin>:5:99",
		Message: "invalid JSON: invalid character '}' after array element; the object is skipped",
	}}
	if diff := cmp.Diff(want, iss); diff != "" {
		t.Errorf("issues (-want +got):\n%s", diff)
	}
}

func TestMetadataThatIsNotAnObject(t *testing.T) {
	in := "apiVersion: networking.istio.io/v1\nkind: DestinationRule\nmetadata: \"a string\"\nspec: {host: reviews}\n"
	_, iss := loadStdin(t, in)
	want := []issue{{
		Severity: "error", Position: "<stdin>:3:1", Field: "metadata",
		Message: `DestinationRule metadata must be an object (with name and namespace), got string "a string"; the object is skipped`,
	}}
	if diff := cmp.Diff(want, iss); diff != "" {
		t.Errorf("issues (-want +got):\n%s", diff)
	}
}

func TestWrongCaseKindSuggestsTheKind(t *testing.T) {
	tests := []struct{ in, want string }{
		{"apiVersion: networking.istio.io/v1\nkind: destinationrule\nmetadata: {name: r}\n",
			`unknown kind "destinationrule" in networking.istio.io/v1: did you mean DestinationRule? (kinds are case-sensitive); the object is skipped`},
		{"apiVersion: v1\nkind: service\nmetadata: {name: s}\n",
			`unknown kind "service" in v1: did you mean Service? (kinds are case-sensitive); the object is skipped`},
		{"apiVersion: security.istio.io/v1\nkind: AuthorisationPolicy\nmetadata: {name: p}\n",
			`unknown kind "AuthorisationPolicy" in security.istio.io/v1: did you mean AuthorizationPolicy?; the object is skipped`},
	}
	for _, tt := range tests {
		_, iss := loadStdin(t, tt.in)
		want := []issue{{Severity: "error", Position: "<stdin>:2:1", Field: "kind", Message: tt.want}}
		if diff := cmp.Diff(want, iss); diff != "" {
			t.Errorf("issues (-want +got):\n%s", diff)
		}
	}
	// Kinds the plugin does not read, in its groups or others, stay silent.
	for _, in := range []string{
		"apiVersion: v1\nkind: Secret\nmetadata: {name: s}\n",
		"apiVersion: v1\nkind: Endpoints\nmetadata: {name: s}\n",
		"apiVersion: networking.istio.io/v1\nkind: Gateway\nmetadata: {name: g}\n",
		"apiVersion: security.istio.io/v1\nkind: RequestAuthentication\nmetadata: {name: r}\n",
		"apiVersion: serving.knative.dev/v1\nkind: service\nmetadata: {name: s}\n",
	} {
		if _, iss := loadStdin(t, in); len(iss) != 0 {
			t.Errorf("%q: issues %+v, want none", in, iss)
		}
	}
}
