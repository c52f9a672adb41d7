package cli

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/model"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/provenance"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/source"
)

// runWithLoad runs the command line with the real engines and printers, and load in place of
// source.Load.
func runWithLoad(t *testing.T, load LoadFunc, args ...string) result {
	t.Helper()
	streams, _, out, errOut := genericiooptions.NewTestIOStreams()
	build := func(streams genericiooptions.IOStreams) *cobra.Command {
		o := NewCommonOptions(streams)
		o.Getenv = func(string) string { return "" }
		return newRootCmd(o,
			func(ctx context.Context, co *ClusterOptions) error { co.Load = load; return co.Run(ctx) },
			func(ctx context.Context, ao *AuthzOptions) error { ao.Load = load; return ao.Run(ctx) },
			func(ctx context.Context, co *CheckOptions) error { co.Load = load; return co.Run(ctx) })
	}
	code := run(args, streams, build)
	return result{code: code, stdout: out.String(), stderr: errOut.String()}
}

// explainsTheSame runs cmd as a subtest against the cluster fileCluster(dir, nil) gives,
// objects read whole, and against the one where alter changes some objects as a live read
// gives them (counting them in altered): stdout, stderr and the exit code must be the same.
// how says how the altered objects are read, for the failure message.
func explainsTheSame(t *testing.T, name, dir string, cmd []string, alter func(altered *int) alterFunc, altered *int, how string) {
	t.Helper()
	t.Run(name, func(t *testing.T) {
		want := runWithLoad(t, fileCluster(dir, nil), cmd...)
		got := runWithLoad(t, fileCluster(dir, alter(altered)), cmd...)
		if got != want {
			t.Errorf("kubectl mesh-explain %s: with %s:\n%+v\nwith every object whole:\n%+v", strings.Join(cmd, " "), how, got, want)
		}
	})
}

// alterFunc changes a snapshot read from files as a cluster would give it; asked is the spec
// the command asked with.
type alterFunc func(asked source.Spec, snap *model.Snapshot) error

// fileCluster is a cluster holding the objects of a scenario folder, as source.Load reads them
// from files for the spec the command asks with; alter, when set, then changes what was read
// as the cluster would give it (it sees the spec as the command asked).
func fileCluster(dir string, alter alterFunc) LoadFunc {
	return func(ctx context.Context, s source.Spec) (*model.Snapshot, error) {
		asked := s
		s.Getter, s.Files, s.Overlay = nil, []string{dir}, false
		snap, err := source.Load(ctx, s)
		if err != nil || alter == nil {
			return snap, err
		}
		return snap, alter(asked, snap)
	}
}

// deniedCluster is a cluster holding the objects of a scenario folder that refuses to list the
// given kinds, as source.Load reports it: the kind is incomplete, with a warning issue.
func deniedCluster(dir string, denied map[string]string) LoadFunc {
	return fileCluster(dir, func(_ source.Spec, snap *model.Snapshot) error {
		snap.Incomplete = map[string]string{}
		for kind, why := range denied {
			snap.Incomplete[kind] = why
			snap.Issues = append(snap.Issues, model.LoadIssue{Severity: "warning", Message: why, Incomplete: []string{kind}})
		}
		return nil
	})
}

const (
	paDenied = "forbidden: nopa cannot list peerauthentications.security.istio.io in namespace foo"
	apDenied = "forbidden: nopa cannot list authorizationpolicies.security.istio.io in namespace istio-system"
)

// TestAuthzFailsWithoutPolicies: without the PeerAuthentications or the AuthorizationPolicies
// no ztunnel policy can be explained. authz exits 1 naming what could not be read and why,
// and prints nothing on stdout, whatever the output format.
func TestAuthzFailsWithoutPolicies(t *testing.T) {
	t.Chdir(repoRoot(t))
	const dir = "testdata/scenarios/authz/b3-strict-with-exemption"
	ok := runWithLoad(t, deniedCluster(dir, nil), "authz", "pod/a", "-n", "foo", "-o", "ztunnel")
	if ok.code != ExitOK || ok.stdout == "" {
		t.Fatalf("with every kind readable: %s", ok)
	}
	tests := []struct {
		name    string
		denied  map[string]string
		args    []string
		wantErr string
	}{
		{
			name:    "PeerAuthentications",
			denied:  map[string]string{"PeerAuthentication": paDenied},
			args:    []string{"authz", "pod/a", "-n", "foo"},
			wantErr: "error: cannot explain ztunnel policy for pod foo/a: PeerAuthentications could not be read (" + paDenied + ")\n",
		},
		{
			name:    "AuthorizationPolicies",
			denied:  map[string]string{"AuthorizationPolicy": apDenied},
			args:    []string{"authz", "pod/a", "-n", "foo"},
			wantErr: "error: cannot explain ztunnel policy for pod foo/a: AuthorizationPolicies could not be read (" + apDenied + ")\n",
		},
		{
			name:   "both, for a selector",
			denied: map[string]string{"PeerAuthentication": paDenied, "AuthorizationPolicy": apDenied},
			args:   []string{"authz", "-l", "app=a", "-n", "foo"},
			wantErr: `error: cannot explain ztunnel policy for pods matching "app=a" in namespace foo: ` +
				"PeerAuthentications could not be read (" + paDenied + "); AuthorizationPolicies could not be read (" + apDenied + ")\n",
		},
		{
			name:    "PeerAuthentications, for a deployment",
			denied:  map[string]string{"PeerAuthentication": paDenied},
			args:    []string{"authz", "deployment/a", "-n", "foo"},
			wantErr: "error: cannot explain ztunnel policy for deployment foo/a: PeerAuthentications could not be read (" + paDenied + ")\n",
		},
	}
	for _, tt := range tests {
		for _, format := range AuthzFormats {
			t.Run(tt.name+"/"+format, func(t *testing.T) {
				r := runWithLoad(t, deniedCluster(dir, tt.denied), append(tt.args, "-o", format)...)
				if r.code != ExitError {
					t.Errorf("exit code %d, want %d", r.code, ExitError)
				}
				if r.stdout != "" {
					t.Errorf("partial output on stdout:\n%s", r.stdout)
				}
				// The error says it all: the denied reads are not repeated as warnings.
				if r.stderr != tt.wantErr {
					t.Errorf("stderr =\n%s\nwant\n%s", r.stderr, tt.wantErr)
				}
			})
		}
	}

	// Other load problems are still reported before the error.
	other := func(ctx context.Context, s source.Spec) (*model.Snapshot, error) {
		snap, err := deniedCluster(dir, map[string]string{"PeerAuthentication": paDenied})(ctx, s)
		if err == nil {
			snap.Issues = append(snap.Issues, model.LoadIssue{Severity: "warning", Message: "the API server warned: something"})
		}
		return snap, err
	}
	r := runWithLoad(t, other, "authz", "pod/a", "-n", "foo")
	want := "warning: the API server warned: something\nerror: cannot explain ztunnel policy for pod foo/a: PeerAuthentications could not be read (" + paDenied + ")\n"
	if r.code != ExitError || r.stderr != want {
		t.Errorf("got %s\nwant stderr\n%s", r, want)
	}
}

// TestClusterAnswersWithoutPeerAuthentications: `cluster` can answer without
// PeerAuthentications (only the mTLS inference needs them), so it exits 0 and warns.
func TestClusterAnswersWithoutPeerAuthentications(t *testing.T) {
	t.Chdir(repoRoot(t))
	const dir = "testdata/scenarios/cluster/a10-subsets-eds"
	denied := "forbidden: nopa cannot list peerauthentications.security.istio.io in namespace bookinfo"
	load := deniedCluster(dir, map[string]string{"PeerAuthentication": denied})
	args := scenarioArgs(t, dir)

	r := runWithLoad(t, load, append(args, "-o", "envoy")...)
	if r.code != ExitIncomplete || !strings.HasPrefix(r.stdout, "[") {
		t.Fatalf("got %s", r)
	}
	// The result's warning repeats the denied read, so it is printed once; the exit code says
	// the answer is incomplete.
	if want := "warning: " + denied + "\n" + "warning: the answer is incomplete: PeerAuthentications could not be read " +
		"(the warnings say why); --allow-partial exits 0 with a partial answer\n"; r.stderr != want {
		t.Errorf("stderr = %q, want %q", r.stderr, want)
	}
	if r := runWithLoad(t, load, append(args, "-o", "envoy", "--allow-partial")...); r.code != ExitOK {
		t.Errorf("--allow-partial: got %s", r)
	}

	r = runWithLoad(t, load, append(args, "-o", "json")...)
	var doc struct {
		Warnings   []string `json:"warnings"`
		Incomplete []string `json:"incomplete"`
	}
	if r.code != ExitIncomplete {
		t.Fatalf("got %s", r)
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Warnings) != 1 || !strings.HasPrefix(doc.Warnings[0], "mTLS inference is incomplete") {
		t.Errorf("warnings = %q", doc.Warnings)
	}
	if !reflect.DeepEqual(doc.Incomplete, []string{"PeerAuthentications"}) {
		t.Errorf("incomplete = %q, want [PeerAuthentications]", doc.Incomplete)
	}
}

// sameAnswerInput is a mesh whose MeshConfig moves the root namespace to mesh-root, with a
// DestinationRule there (found only once the plan is corrected) and one in a namespace no
// lookup reaches (D2, reported only with -A).
const sameAnswerInput = `apiVersion: v1
kind: ConfigMap
metadata: {name: istio, namespace: istio-system}
data:
  mesh: "rootNamespace: mesh-root"
---
apiVersion: v1
kind: Service
metadata: {name: reviews, namespace: bookinfo}
spec:
  clusterIP: 10.96.0.10
  ports: [{name: http, port: 9080}]
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: reviews, namespace: mesh-root}
spec:
  host: reviews.bookinfo.svc.cluster.local
  trafficPolicy:
    connectionPool:
      tcp: {maxConnections: 7}
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: reviews, namespace: elsewhere}
spec:
  host: reviews.bookinfo.svc.cluster.local
`

// TestFilesAreReadAsAClusterWouldBe: files go through the read plan and its corrections: the
// root namespace MeshConfig names is found (standard input is read again for it), and a
// DestinationRule off the lookup path is reported (D2) only with -A, as from a cluster.
func TestFilesAreReadAsAClusterWouldBe(t *testing.T) {
	for _, tc := range []struct {
		args   []string
		wantD2 bool
	}{
		{[]string{"cluster", "reviews", "-n", "bookinfo", "-f", "-"}, false},
		{[]string{"cluster", "reviews", "-n", "bookinfo", "-f", "-", "-A"}, true},
		{[]string{"cluster", "reviews", "-n", "bookinfo", "-f", "-", "--all-namespaces"}, true},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			envoy := runMain(t, sameAnswerInput, append(tc.args, "-o", "envoy")...)
			if envoy.code != ExitOK || envoy.stderr != "" {
				t.Fatalf("got %s", envoy)
			}
			if !strings.Contains(envoy.stdout, `"maxConnections": 7`) {
				t.Errorf("the root namespace's DestinationRule was not applied:\n%s", envoy.stdout)
			}
			doc := runMain(t, sameAnswerInput, append(tc.args, "-o", "json")...)
			if doc.code != ExitOK {
				t.Fatalf("got %s", doc)
			}
			var res struct {
				Diagnostics []struct {
					ID        string           `json:"id"`
					Resources []provenance.Ref `json:"resources"`
				} `json:"diagnostics"`
			}
			if err := json.Unmarshal([]byte(doc.stdout), &res); err != nil {
				t.Fatal(err)
			}
			gotD2 := false
			for _, d := range res.Diagnostics {
				if d.ID == "D2" && len(d.Resources) > 0 && d.Resources[0].Namespace == "elsewhere" {
					gotD2 = true
				}
			}
			if gotD2 != tc.wantD2 {
				t.Errorf("D2 reported: %v, want %v\n%s", gotD2, tc.wantD2, doc.stdout)
			}
		})
	}
}
