package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCommandSuggestions(t *testing.T) {
	for _, tc := range []struct {
		typed string
		want  string // "" when nothing is suggested
	}{
		{"clustr", "cluster"},
		{"clusters", "cluster"},
		{"atuhz", "authz"},
		{"auth", "authz"},
		{"authorizationpolicy", "authz"},
		{"cds", "cluster"},
		{"verison", "version"},
		{"explain", ""},
	} {
		r := runWith(t, &fakes{}, tc.typed)
		first, rest, _ := strings.Cut(r.stderr, "\n")
		if r.code != ExitUsage || first != `error: unknown command "`+tc.typed+`" for "kubectl mesh-explain"` {
			t.Errorf("%s: %s", tc.typed, r)
			continue
		}
		got := strings.Contains(rest, "\nDid you mean this?\n\t"+tc.want+"\n")
		if tc.want == "" {
			got = !strings.Contains(rest, "Did you mean")
		}
		if !got {
			t.Errorf("%s: want suggestion %q\n%s", tc.typed, tc.want, r)
		}
	}
}

// A pod, deployment or service that is not in -n but is in another namespace of the input gets a
// `did you mean -n` hint; one that is nowhere gets none.
func TestNamespaceHint(t *testing.T) {
	t.Chdir(repoRoot(t))
	dir := t.TempDir()
	extra := `apiVersion: apps/v1
kind: Deployment
metadata: {name: productpage-v1, namespace: frontend}
spec:
  selector: {matchLabels: {app: productpage}}
  template: {metadata: {labels: {app: productpage}}}
---
apiVersion: v1
kind: Pod
metadata: {name: productpage-v1, namespace: frontend}
spec: {containers: [{name: c, image: i}]}
`
	if err := os.WriteFile(filepath.Join(dir, "extra.yaml"), []byte(extra), 0o600); err != nil {
		t.Fatal(err)
	}
	files := []string{"-f", "testdata/examples/ambient", "-f", "testdata/examples/bookinfo", "-f", dir}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"authz", "pod/productpage-v1", "-n", "foo"},
			"error: pod foo/productpage-v1 not found (pods in foo: a; did you mean -n bookinfo? pod/productpage-v1 is in namespaces bookinfo, frontend)\n"},
		{[]string{"cluster", "reviews", "-n", "bookinfo", "--from", "pod/a"},
			"error: pod bookinfo/a not found (no pod in namespace bookinfo has a similar name; use a namespace proxy if the pod is not part of the input; did you mean -n foo? pod/a is in namespace foo)\n"},
		{[]string{"authz", "deployment/productpage-v1", "-n", "foo"},
			"did you mean -n frontend? deployment/productpage-v1 is in namespace frontend)\n"},
		{[]string{"authz", "svc/productpage", "-n", "foo"},
			"error: service foo/productpage not found (services in foo: a; did you mean -n bookinfo? service/productpage is in namespace bookinfo)\n"},
		{[]string{"authz", "pod/nowhere", "-n", "foo"},
			"error: pod foo/nowhere not found (pods in foo: a)\n"},
	} {
		r := runMain(t, "", append(tc.args, files...)...)
		lines := strings.Split(strings.TrimSuffix(r.stderr, "\n"), "\n")
		last := lines[len(lines)-1] + "\n"
		if r.code != ExitError || !strings.HasSuffix(last, tc.want) || r.stdout != "" {
			t.Errorf("%s: want last stderr line ending %q\n%s", strings.Join(tc.args, " "), tc.want, r)
		}
	}
}
