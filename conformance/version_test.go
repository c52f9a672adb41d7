package conformance

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/cli"
)

// The Istio version `kubectl mesh-explain version` says it models is the one whose code this
// suite runs: cli.IstioModuleVersion is the istio.io/istio this module requires, and
// cli.IstioVersion is that module's VERSION file (the minor version it develops or releases).
func TestModelledIstioVersion(t *testing.T) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Version}} {{.Dir}}", "istio.io/istio").Output()
	if err != nil {
		t.Fatalf("locating istio.io/istio: %v", err)
	}
	version, dir, _ := strings.Cut(strings.TrimSpace(string(out)), " ")
	if version != cli.IstioModuleVersion {
		t.Errorf("the conformance suite builds istio.io/istio %q, cli.IstioModuleVersion is %q", version, cli.IstioModuleVersion)
	}
	data, err := os.ReadFile(filepath.Join(dir, "VERSION"))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(string(data)); got != cli.IstioVersion {
		t.Errorf("istio.io/istio %s is version %s (its VERSION file), cli.IstioVersion is %s", version, got, cli.IstioVersion)
	}
}
