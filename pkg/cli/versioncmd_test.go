package cli

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/explain"
)

// IstioModuleVersion is the istio.io/istio version conformance/go.mod pins (the conformance
// suite checks IstioVersion against that module's VERSION file).
func TestIstioModuleVersionIsPinned(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(repoRoot(t), "conformance", "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^\s*istio\.io/istio (\S+)`).FindSubmatch(data)
	if m == nil {
		t.Fatal("conformance/go.mod does not require istio.io/istio")
	}
	if got := string(m[1]); got != IstioModuleVersion {
		t.Errorf("conformance/go.mod pins istio.io/istio %s, IstioModuleVersion is %s", got, IstioModuleVersion)
	}
}

func TestImageVersion(t *testing.T) {
	for image, want := range map[string]string{
		"docker.io/istio/pilot:1.31.2":                   "1.31.2",
		"docker.io/istio/pilot:1.31.2-distroless":        "1.31.2",
		"gcr.io/istio-release/pilot:1.30.0-debug":        "1.30.0",
		"localhost:5000/istio/pilot:1.31-dev":            "1.31-dev",
		"docker.io/istio/pilot:1.31.0-beta.1@sha256:abc": "1.31.0-beta.1",
		"docker.io/istio/pilot:latest":                   "",
		"localhost:5000/istio/pilot":                     "",
		"docker.io/istio/pilot@sha256:abc":               "",
		"":                                               "",
	} {
		if got := imageVersion(image); got != want {
			t.Errorf("imageVersion(%q) = %q, want %q", image, got, want)
		}
	}
	for v, want := range map[string]bool{IstioVersion + ".2": true, IstioVersion + "-dev": true, IstioVersion: true,
		IstioVersion + "0.1": false, "1.1": false, "2.0.0": false} {
		if got := sameMinor(v, IstioVersion); got != want {
			t.Errorf("sameMinor(%q) = %v, want %v", v, got, want)
		}
	}
}

func TestVersionCommand(t *testing.T) {
	same := Istiod{Namespace: "istio-system", Name: "istiod", Revision: "default", Image: "docker.io/istio/pilot:" + IstioVersion + ".2", Version: IstioVersion + ".2"}
	old := Istiod{Namespace: "istio-system", Name: "istiod-canary", Revision: "canary", Image: "docker.io/istio/pilot:1.2.0", Version: "1.2.0"}
	oldWarning := "warning: istiod istio-system/istiod-canary (revision canary) runs Istio 1.2.0; this build models Istio " + IstioVersion +
		": where their behaviour differs, the explanation may not match what it pushes\n"
	platform := runtime.GOOS + "/" + runtime.GOARCH

	f := &fakes{istiods: []Istiod{same, old}}
	r := runWith(t, f, "version")
	wantOut := "Plugin version: dev (" + platform + ", " + runtime.Version() + ")\n" +
		"Models Istio:   " + IstioVersion + " (istio.io/istio@" + IstioModuleVersion + ")\n" +
		"istiod:         " + IstioVersion + ".2 (revision default, istio-system/istiod, docker.io/istio/pilot:" + IstioVersion + ".2)\n" +
		"istiod:         1.2.0 (revision canary, istio-system/istiod-canary, docker.io/istio/pilot:1.2.0)\n"
	if r.code != ExitOK || r.stdout != wantOut || r.stderr != oldWarning || f.istiodLists != 1 {
		t.Errorf("version: want\n%s%s\ngot %s", wantOut, oldWarning, r)
	}

	for _, format := range []string{"json", "yaml"} {
		f := &fakes{istiods: []Istiod{same, old}}
		r := runWith(t, f, "version", "-o", format)
		var got VersionInfo
		data := []byte(r.stdout)
		if format == "yaml" {
			var err error
			if data, err = yaml.YAMLToJSON(data); err != nil {
				t.Fatal(err)
			}
		}
		if err := json.Unmarshal(data, &got); err != nil || r.code != ExitOK {
			t.Fatalf("version -o %s: %v\n%s", format, err, r)
		}
		want := VersionInfo{
			Plugin:   PluginVersion{Version: "dev", GoVersion: runtime.Version(), Platform: platform},
			Models:   ModelledIstio{Istio: IstioVersion, Module: "istio.io/istio@" + IstioModuleVersion},
			Istiod:   []Istiod{same, old},
			Warnings: []string{strings.TrimSuffix(strings.TrimPrefix(oldWarning, "warning: "), "\n")},
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("version -o %s (-want +got):\n%s", format, d)
		}
	}

	// --client and -f read nothing; a failed read is a warning, not an error.
	for _, args := range [][]string{{"version", "--client"}, {"version", "-f", "x.yaml"}} {
		f := &fakes{istiods: []Istiod{old}}
		r := runWith(t, f, args...)
		if r.code != ExitOK || r.stderr != "" || strings.Contains(r.stdout, "istiod") || f.istiodLists != 0 {
			t.Errorf("%v: %s", args, r)
		}
	}
	f = &fakes{istiodErr: errors.New(`deployments.apps is forbidden`)}
	r = runWith(t, f, "version")
	if r.code != ExitOK || r.stderr != "warning: cannot list the istiod Deployments in istio-system: deployments.apps is forbidden\n" || strings.Contains(r.stdout, "istiod") {
		t.Errorf("version with a refused list: %s", r)
	}
	f = &fakes{}
	r = runWith(t, f, "version", "--istio-namespace", "mesh")
	if r.code != ExitOK || r.stderr != "warning: no istiod Deployment (app=istiod) in namespace mesh\n" || !strings.Contains(r.stdout, "istiod:         not found\n") {
		t.Errorf("version without istiod: %s", r)
	}
	r = runWith(t, &fakes{}, "version", "-o", "table")
	if r.code != ExitUsage || !strings.HasPrefix(r.stderr, `error: unknown output format "table" (allowed formats: json, yaml)`) {
		t.Errorf("version -o table: %s", r)
	}
}

// cluster and authz warn once about an istiod of another version when they read the cluster,
// never from files, and say nothing when the list fails (a panic of the list's goroutine is a
// warning, not the end of the process).
func TestIstiodVersionWarning(t *testing.T) {
	old := Istiod{Namespace: "istio-system", Name: "istiod", Revision: "default", Image: "docker.io/istio/pilot:1.2.0", Version: "1.2.0"}
	canary := Istiod{Namespace: "istio-system", Name: "istiod-canary", Revision: "canary", Image: "docker.io/istio/pilot:1.3.0", Version: "1.3.0"}
	warn := func(i Istiod) string {
		return "warning: istiod istio-system/" + i.Name + " (revision " + i.Revision + ") runs Istio " + i.Version + "; this build models Istio " +
			IstioVersion + ": where their behaviour differs, the explanation may not match what it pushes\n"
	}
	for _, tc := range []struct {
		name    string
		args    []string
		istiods []Istiod
		err     error
		want    string
		lists   int
	}{
		{"cluster live", []string{"cluster", "reviews", "-n", "default", "-o", "json"}, []Istiod{old}, nil, warn(old), 1},
		{"authz live", []string{"authz", "pod/a", "-n", "default", "-o", "json"}, []Istiod{old, canary}, nil, warn(old) + warn(canary), 1},
		{"--revision picks its istiod", []string{"cluster", "reviews", "-n", "default", "-o", "json", "--revision", "canary"}, []Istiod{old, canary}, nil, warn(canary), 1},
		{"overlay reads the cluster", []string{"cluster", "reviews", "-n", "default", "-o", "json", "-f", "x.yaml", "--overlay"}, []Istiod{old}, nil, warn(old), 1},
		{"files", []string{"cluster", "reviews", "-n", "default", "-o", "json", "-f", "x.yaml"}, []Istiod{old}, nil, "", 0},
		{"refused", []string{"cluster", "reviews", "-n", "default", "-o", "json"}, nil, errors.New("forbidden"), "", 1},
		{"the list panics", []string{"cluster", "reviews", "-n", "default", "-o", "json"}, nil, nil, "warning: the istiod version was not checked: internal error: boom\n", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakes{istiods: tc.istiods, istiodErr: tc.err,
				authzResults: []*explain.Result{{APIVersion: explain.APIVersion, Kind: explain.KindAuthzExplanation,
					Subject: explain.Subject{Kind: "Workload", Workload: "pod/a"}}}}
			if tc.name == "the list panics" {
				f.istiodPanic = "boom"
			}
			r := runWith(t, f, tc.args...)
			if r.code != ExitOK || r.stderr != tc.want || f.istiodLists != tc.lists || !strings.HasPrefix(r.stdout, "{") {
				t.Errorf("want stderr %q and %d list(s), got %d\n%s", tc.want, tc.lists, f.istiodLists, r)
			}
		})
	}
}
