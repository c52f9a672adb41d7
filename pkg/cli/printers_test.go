package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The kubectl formats print from the same document -o json prints: each value they pull out
// is the value the document holds.
func TestKubectlFormats(t *testing.T) {
	t.Chdir(repoRoot(t))
	clusterArgs := []string{"cluster", "reviews", "-n", "bookinfo", "--from", "pod/productpage-v1", "-f", "testdata/examples/bookinfo"}
	authzArgs := []string{"authz", "pod/a", "-n", "foo", "-f", "testdata/examples/ambient"}
	var doc struct {
		Kind    string
		Objects []struct {
			Kind, Name string
			Missing    bool
			Value      struct{ ConnectTimeout string }
		}
	}
	r := runMain(t, "", append(clusterArgs, "-o", "json")...)
	if r.code != ExitOK || json.Unmarshal([]byte(r.stdout), &doc) != nil || len(doc.Objects) < 2 {
		t.Fatalf("-o json: %s", r)
	}
	var names, timeouts []string
	for _, o := range doc.Objects {
		names = append(names, "cluster/"+o.Name)
		timeouts = append(timeouts, o.Name+"="+o.Value.ConnectTimeout)
	}

	tmpl := filepath.Join(t.TempDir(), "tmpl")
	if err := os.WriteFile(tmpl, []byte(`{{range .objects}}{{.name}}={{.value.connectTimeout}}{{"\n"}}{{end}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	jp := filepath.Join(t.TempDir(), "jp")
	if err := os.WriteFile(jp, []byte(`{range .objects[*]}{.name}={.value.connectTimeout}{"\n"}{end}`), 0o600); err != nil {
		t.Fatal(err)
	}
	lines := strings.Join(timeouts, "\n") + "\n"
	for _, tc := range []struct{ output, want string }{
		{"name", strings.Join(names, "\n") + "\n"},
		{"jsonpath={.kind}", doc.Kind},
		{"jsonpath={.objects[0].value.connectTimeout}", doc.Objects[0].Value.ConnectTimeout},
		{`jsonpath={range .objects[*]}{.name}={.value.connectTimeout}{"\n"}{end}`, lines},
		{"jsonpath-file=" + jp, lines},
		{`go-template={{range .objects}}{{.name}}={{.value.connectTimeout}}{{"\n"}}{{end}}`, lines},
		{"go-template-file=" + tmpl, lines},
		// A missing key prints nothing, as kubectl's --allow-missing-template-keys default does.
		{"jsonpath={.nosuchfield}", ""},
	} {
		r := runMain(t, "", append(clusterArgs, "-o", tc.output)...)
		if r.code != ExitOK || r.stdout != tc.want || r.stderr != "" {
			t.Errorf("-o %s: want stdout %q\n%s", tc.output, tc.want, r)
		}
	}

	// authz: -o name lists the Authorizations; a deployment prints a List, items reachable.
	r = runMain(t, "", append(authzArgs, "-o", "json")...)
	if r.code != ExitOK || json.Unmarshal([]byte(r.stdout), &doc) != nil || len(doc.Objects) == 0 {
		t.Fatalf("authz -o json: %s", r)
	}
	names = nil
	for _, o := range doc.Objects {
		if !o.Missing {
			names = append(names, "authorization/"+o.Name)
		}
	}
	r = runMain(t, "", append(authzArgs, "-o", "name")...)
	if want := strings.Join(names, "\n") + "\n"; r.code != ExitOK || r.stdout != want {
		t.Errorf("authz -o name: want %q\n%s", want, r)
	}
	r = runMain(t, "", "authz", "-l", "app=a", "-n", "foo", "-f", "testdata/examples/ambient", "-o", "jsonpath={.kind} {.items[*].subject.workload}")
	if want := "List pod/a"; r.code != ExitOK || r.stdout != want {
		t.Errorf("authz -l -o jsonpath: want %q\n%s", want, r)
	}
}

// A template that does not parse, or no template, is a usage error naming the format; a
// template that fails on the document is an error without the document dumped into it.
func TestKubectlFormatErrors(t *testing.T) {
	t.Chdir(repoRoot(t))
	args := []string{"cluster", "reviews", "-n", "bookinfo", "-f", "testdata/examples/bookinfo"}
	for _, tc := range []struct {
		output, want string
		code         int
	}{
		{"jsonpath", "error: -o jsonpath needs a template: -o jsonpath=TEMPLATE\n", ExitUsage},
		{"go-template=", "error: -o go-template needs a template: -o go-template=TEMPLATE\n", ExitUsage},
		{"jsonpath={.objects[0.value}", "error: invalid -o jsonpath: error parsing jsonpath {.objects[0.value}, unterminated array\n", ExitUsage},
		{"go-template-file=/nonexistent/t", "error: invalid -o go-template-file: error reading --template /nonexistent/t, open /nonexistent/t: no such file or directory\n", ExitUsage},
		{"go-template={{.kind.x}}", "error: error executing template \"{{.kind.x}}\": template: output:1:7: executing \"output\" at <.kind.x>: can't evaluate field x in type interface {}\n", ExitError},
	} {
		r := runMain(t, "", append(args, "-o", tc.output)...)
		first, _, _ := strings.Cut(r.stderr, "\n")
		if r.code != tc.code || first+"\n" != tc.want || r.stdout != "" {
			t.Errorf("-o %s: want exit %d and %q\n%s", tc.output, tc.code, tc.want, r)
		}
	}
}
