package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/engine/sidecarauthz"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/explain"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/model"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/provenance"
)

func TestUsageErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		// wantErr is the first stderr line.
		wantErr string
		// wantUsage is the usage line printed after it.
		wantUsage string
	}{
		{"cluster without host", []string{"cluster"},
			"error: cluster takes exactly one HOST[:PORT] argument, got 0", "kubectl mesh-explain cluster HOST[:PORT] [flags]"},
		{"cluster with two hosts", []string{"cluster", "a", "b"},
			"error: cluster takes exactly one HOST[:PORT] argument, got 2", "kubectl mesh-explain cluster HOST[:PORT] [flags]"},
		{"unknown output format lists the allowed ones", []string{"cluster", "reviews", "-o", "xml"},
			`error: unknown output format "xml" (allowed formats: table, wide, json, yaml, envoy, name, jsonpath=..., jsonpath-file=..., go-template=..., go-template-file=...)`, "kubectl mesh-explain cluster HOST[:PORT] [flags]"},
		{"authz lists its formats", []string{"authz", "pod/a", "-o", "xml"},
			`error: unknown output format "xml" (allowed formats: table, wide, json, yaml, ztunnel, envoy, name, jsonpath=..., jsonpath-file=..., go-template=..., go-template-file=...)`,
			"kubectl mesh-explain authz (pod/NAME | deployment/NAME | service/NAME | waypoint/NAME | -l SELECTOR) [flags]"},
		{"cluster does not print ztunnel", []string{"cluster", "reviews", "-o", "ztunnel"},
			`error: unknown output format "ztunnel" (allowed formats: table, wide, json, yaml, envoy, name, jsonpath=..., jsonpath-file=..., go-template=..., go-template-file=...)`, "kubectl mesh-explain cluster HOST[:PORT] [flags]"},
		{"unknown flag", []string{"cluster", "reviews", "--bogus"},
			"error: unknown flag: --bogus", "kubectl mesh-explain cluster HOST[:PORT] [flags]"},
		{"unknown command", []string{"clusters"},
			`error: unknown command "clusters" for "kubectl mesh-explain"`, "kubectl mesh-explain [flags]"},
		{"bad port", []string{"cluster", "reviews:http"},
			`error: invalid HOST[:PORT] "reviews:http": port "http" is not a number from 1 to 65535`, "kubectl mesh-explain cluster HOST[:PORT] [flags]"},
		{"conflicting ports", []string{"cluster", "reviews:9080", "--port", "9081"},
			`error: --port 9081 conflicts with the port in "reviews:9080"`, "kubectl mesh-explain cluster HOST[:PORT] [flags]"},
		{"port out of range", []string{"cluster", "reviews", "--port", "70000"},
			"error: --port 70000 is not a port number (1 to 65535)", "kubectl mesh-explain cluster HOST[:PORT] [flags]"},
		{"bad --from", []string{"cluster", "reviews", "--from", "service/x"},
			`error: invalid --from "service/x": unknown kind "service" (want pod/NAME, deployment/NAME or namespace/NS)`, "kubectl mesh-explain cluster HOST[:PORT] [flags]"},
		{"bad --color", []string{"cluster", "reviews", "--color", "sometimes"},
			`error: invalid color mode "sometimes" (allowed: auto, always, never)`, "kubectl mesh-explain cluster HOST[:PORT] [flags]"},
		{"bad --max-input-bytes", []string{"cluster", "reviews", "--max-input-bytes", "-1"},
			`error: invalid --max-input-bytes "-1": want a positive number of bytes, such as 1048576 or 256Mi`, "kubectl mesh-explain cluster HOST[:PORT] [flags]"},
		{"--overlay without -f", []string{"cluster", "reviews", "--overlay"},
			"error: --overlay needs objects to overlay (-f FILE)", "kubectl mesh-explain cluster HOST[:PORT] [flags]"},
		{"authz without workload", []string{"authz"},
			"error: name the workload: pod/NAME, deployment/NAME, service/NAME, waypoint/NAME or -l SELECTOR", "kubectl mesh-explain authz (pod/NAME | deployment/NAME | service/NAME | waypoint/NAME | -l SELECTOR) [flags]"},
		{"authz with workload and selector", []string{"authz", "pod/a", "-l", "app=a"},
			"error: give either pod/a or -l, not both", "kubectl mesh-explain authz (pod/NAME | deployment/NAME | service/NAME | waypoint/NAME | -l SELECTOR) [flags]"},
		{"authz with a bad kind", []string{"authz", "statefulset/a"},
			`error: invalid workload "statefulset/a": unknown kind "statefulset" (want pod/NAME, deployment/NAME, service/NAME or waypoint/NAME)`,
			"kubectl mesh-explain authz (pod/NAME | deployment/NAME | service/NAME | waypoint/NAME | -l SELECTOR) [flags]"},
		{"authz with a bad selector", []string{"authz", "-l", "app==="},
			`error: invalid selector "app===": `, "kubectl mesh-explain authz (pod/NAME | deployment/NAME | service/NAME | waypoint/NAME | -l SELECTOR) [flags]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakes{}
			r := runWith(t, f, append(tt.args, "-n", "default")...)
			if r.code != ExitUsage {
				t.Fatalf("exit code %d, want %d\n%s", r.code, ExitUsage, r)
			}
			lines := strings.Split(r.stderr, "\n")
			if !strings.HasPrefix(lines[0], tt.wantErr) {
				t.Errorf("first stderr line %q, want prefix %q", lines[0], tt.wantErr)
			}
			if !strings.Contains(r.stderr, "\nUsage:\n  "+tt.wantUsage+"\n") || !strings.Contains(r.stderr, "--help' for examples and all flags") {
				t.Errorf("usage not printed:\n%s", r.stderr)
			}
			if r.stdout != "" {
				t.Errorf("stdout = %q, want nothing", r.stdout)
			}
			if len(f.specs) != 0 {
				t.Error("a usage error still loaded the snapshot")
			}
		})
	}
}

func TestEngineErrors(t *testing.T) {
	tests := []struct {
		name     string
		err      error
		wantCode int
		wantErr  string
	}{
		{"not found", &explain.NotFoundError{What: `host "reviewz.bookinfo"`, Hint: "did you mean reviews.bookinfo.svc.cluster.local?"},
			ExitError, `error: host "reviewz.bookinfo" not found (did you mean reviews.bookinfo.svc.cluster.local?)` + "\n"},
		{"invalid query", &explain.InvalidQueryError{Message: "service reviews has no port 9999 (ports: 9080)"},
			ExitError, "error: service reviews has no port 9999 (ports: 9080)\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// The engine fails the same way on the wider read a not-found host triggers.
			f := &fakes{clusterErrs: []error{tt.err, tt.err}}
			r := runWith(t, f, "cluster", "reviewz.bookinfo", "-f", "x.yaml")
			if r.code != tt.wantCode || r.stderr != tt.wantErr || r.stdout != "" {
				t.Fatalf("got %s\nwant exit code %d and stderr %q", r, tt.wantCode, tt.wantErr)
			}
		})
	}
}

func TestDiagnosticsDoNotChangeTheExitCode(t *testing.T) {
	res := &explain.Result{APIVersion: explain.APIVersion, Kind: explain.KindClusterExplanation,
		Subject:     explain.Subject{Kind: "Host", Host: "reviews.bookinfo.svc.cluster.local"},
		Diagnostics: []explain.Diagnostic{{ID: "D3", Severity: explain.SeverityError, Message: "hidden by exportTo"}}}
	f := &fakes{clusterResults: []*explain.Result{res}}
	r := runWith(t, f, "cluster", "reviews", "-f", "x.yaml")
	if r.code != ExitOK || !strings.Contains(r.stdout, "hidden by exportTo") {
		t.Fatalf("got %s", r)
	}
}

func TestWarningsGoToStderr(t *testing.T) {
	ref := provenance.Ref{Kind: "DestinationRule", Namespace: "bookinfo", Name: "broken"}
	snap := &model.Snapshot{Issues: []model.LoadIssue{{
		Severity: "error", Resource: &ref, Position: &provenance.Position{File: "dr.yaml", Line: 3, Col: 1},
		Field: "spec.trafficPolicy.tls.mode", Message: `unknown value "MUTUALLY"; the object is skipped`,
	}}}
	res := &explain.Result{APIVersion: explain.APIVersion, Kind: explain.KindClusterExplanation,
		Subject:  explain.Subject{Kind: "Host", Host: "reviews.bookinfo.svc.cluster.local"},
		Warnings: []string{"PeerAuthentications could not be read; mTLS inference is incomplete"}}
	for _, format := range []string{"envoy", "json", "yaml", "table"} {
		t.Run(format, func(t *testing.T) {
			f := &fakes{snaps: []*model.Snapshot{snap}, clusterResults: []*explain.Result{res}}
			r := runWith(t, f, "cluster", "reviews", "-f", "dr.yaml", "-o", format)
			// The skipped DestinationRule makes the answer incomplete.
			if r.code != ExitIncomplete {
				t.Fatal(r)
			}
			issue := `warning: dr.yaml:3:1: DestinationRule bookinfo/broken: spec.trafficPolicy.tls.mode: unknown value "MUTUALLY"; the object is skipped` + "\n"
			if !strings.HasPrefix(r.stderr, issue) {
				t.Errorf("stderr does not start with the load issue:\n%s", r.stderr)
			}
			// Only the table prints warnings on stdout; it names the skipped object there too.
			if format != "table" && strings.Contains(r.stdout, "warning: dr.yaml") {
				t.Errorf("a load issue reached stdout:\n%s", r.stdout)
			}
			switch format {
			case "envoy":
				// The Envoy JSON has no place for the result's warnings: they go to stderr.
				if !strings.Contains(r.stderr, "warning: PeerAuthentications could not be read") || r.stdout != "[]\n" {
					t.Errorf("got %s", r)
				}
			case "json":
				var doc map[string]any
				if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
					t.Fatalf("stdout is not JSON: %v\n%s", err, r.stdout)
				}
				fallthrough
			default:
				// The document and the table carry the result's warnings themselves.
				if strings.Contains(r.stderr, "PeerAuthentications could not be read") {
					t.Errorf("result warning printed twice:\n%s", r)
				}
				if !strings.Contains(r.stdout, "PeerAuthentications could not be read") {
					t.Errorf("result warning missing from the output:\n%s", r.stdout)
				}
			}
		})
	}
}

func TestInvalidMeshConfigIsADataError(t *testing.T) {
	mesh := filepath.Join(t.TempDir(), "mesh.yaml")
	if err := os.WriteFile(mesh, []byte("connectTimeout: [not, a, duration]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f := &fakes{}
	r := runWith(t, f, "cluster", "reviews", "-f", "x.yaml", "--meshconfig", mesh)
	if r.code != ExitData || !strings.HasPrefix(r.stderr, "error: invalid mesh config "+mesh+": ") {
		t.Fatalf("got %s", r)
	}
	if len(f.specs) != 0 {
		t.Error("an invalid mesh config still loaded the snapshot")
	}
}

func TestInputOverTheLimitStopsTheCommand(t *testing.T) {
	yaml := "apiVersion: v1\nkind: Service\nmetadata: {name: reviews}\n" + strings.Repeat("# padding\n", 300)
	r := runMain(t, yaml, "cluster", "reviews", "-f", "-", "--max-input-bytes", "1Ki")
	if r.code != ExitError || r.stderr != "error: standard input is larger than the input limit of 1024 bytes (--max-input-bytes)\n" {
		t.Fatalf("got %s", r)
	}
	mesh := filepath.Join(t.TempDir(), "mesh.yaml")
	if err := os.WriteFile(mesh, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	r = runMain(t, "", "cluster", "reviews", "-f", mesh, "--max-input-bytes", "1Ki")
	want := "error: reading " + mesh + ": the file has 3055 bytes, more than the input limit of 1024 bytes (--max-input-bytes)\n"
	if r.code != ExitError || r.stderr != want {
		t.Fatalf("got %s\nwant stderr %q", r, want)
	}
}

func TestMainRecoversFromPanics(t *testing.T) {
	streams, _, out, errOut := genericiooptions.NewTestIOStreams()
	code := run([]string{"boom"}, streams, func(genericiooptions.IOStreams) *cobra.Command {
		root := &cobra.Command{Use: "x", SilenceErrors: true, SilenceUsage: true}
		root.AddCommand(&cobra.Command{Use: "boom", RunE: func(*cobra.Command, []string) error { panic("index out of range") }})
		return root
	})
	if code != ExitInternal || out.Len() != 0 || !strings.HasPrefix(errOut.String(), "error: internal error: index out of range") {
		t.Fatalf("code %d, stdout %q, stderr %q", code, out, errOut)
	}
}

func TestHelpAndVersion(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"cluster", "--help"}, {"authz", "--help"}, {}} {
		r := runMain(t, "", args...)
		if r.code != ExitOK || r.stderr != "" {
			t.Fatalf("%v: %s", args, r)
		}
		if !strings.Contains(r.stdout, "Usage:\n  kubectl mesh-explain") || !strings.Contains(r.stdout, "Examples:\n  # ") {
			t.Errorf("%v: help lacks the kubectl usage line or examples:\n%s", args, r.stdout)
		}
		for _, flag := range []string{"--kubeconfig", "--context", "--namespace", "--request-timeout", "--filename", "--recursive",
			"--overlay", "--istio-namespace", "--revision", "--meshconfig", "--color"} {
			if !strings.Contains(r.stdout, flag) {
				t.Errorf("%v: help lacks %s", args, flag)
			}
		}
	}
	r := runMain(t, "", "--version")
	if r.code != ExitOK || !strings.HasPrefix(r.stdout, "kubectl mesh-explain ") {
		t.Fatalf("--version: %s", r)
	}
}

// Every example in --help must parse: run each one's flags through the command with the
// engine replaced, so an example that names a flag or format we do not ship fails here.
func TestHelpExamplesParse(t *testing.T) {
	streams, _, _, _ := genericiooptions.NewTestIOStreams()
	root := NewRootCmd(streams)
	cmds := append([]*cobra.Command{root}, root.Commands()...)
	n := 0
	for _, c := range cmds {
		for _, line := range strings.Split(c.Example, "\n") {
			line = strings.TrimSpace(line)
			if !strings.HasPrefix(line, "kubectl mesh-explain ") {
				continue
			}
			n++
			args := strings.Fields(strings.TrimPrefix(line, "kubectl mesh-explain "))
			f := &fakes{authzResults: []*explain.Result{{Subject: explain.Subject{Kind: "Workload"}}}}
			if strings.Contains(line, " authz ") && strings.Contains(line, "-o envoy") {
				// -o envoy answers only for a sidecar pod.
				f.authzResults[0].Sections = []explain.Section{{Title: sidecarauthz.DataPlaneSection}}
			}
			// Force files mode so no example reaches a cluster; keep the example's own -f.
			if !containsFlag(args, "-f") {
				args = append(args, "-f", "x.yaml")
			}
			r := runWith(t, f, args...)
			if r.code != ExitOK {
				t.Errorf("example %q does not run:\n%s", line, r)
			}
		}
	}
	if n < 8 {
		t.Fatalf("found %d examples, want every command to have some", n)
	}
}

func containsFlag(args []string, flag string) bool {
	for _, a := range args {
		if a == flag {
			return true
		}
	}
	return false
}

func TestMessagesShowControlCharactersEscaped(t *testing.T) {
	in := `{"apiVersion":"networking.istio.io/v1","kind":"DestinationRule","metadata":{"name":"r\u001b]0;owned\u0007","namespace":"default"},"spec":{"host":"reviews"}}
{"apiVersion":"networking.istio.io/v1","kind":"DestinationRule","metadata":{"name":"r","namespace":"default"},"spec":{"host":"reviews","trafficPolicy":{"connectionPool":{"tcp":{"maxConnections":"x\u202e"}}}}}`
	r := runMain(t, in, "cluster", "reviews\x1b[2J", "-f", "-")
	if strings.ContainsAny(r.stderr, "\x1b\x07\u202e") {
		t.Errorf("raw control characters on stderr:\n%q", r.stderr)
	}
	for _, want := range []string{`DestinationRule "r\x1b]0;owned\a": invalid name`, `got string "x\u202e"`, `host "reviews\x1b[2j" not found`} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("%q missing from stderr:\n%s", want, r.stderr)
		}
	}
}
