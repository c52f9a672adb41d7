package cli

import (
	"path/filepath"
	"reflect"
	"testing"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/model"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/source"
)

// slimPods reads the Pods as a live read returns them (source.SlimPod); slimmed counts the Pods
// that lost a field.
func slimPods(slimmed *int) alterFunc {
	return func(_ source.Spec, snap *model.Snapshot) error {
		for _, p := range snap.Pods {
			full := p.DeepCopy()
			if source.SlimPod(p); !reflect.DeepEqual(p, full) {
				*slimmed++
			}
		}
		return nil
	}
}

// TestSlimPodsExplainTheSame runs every cluster and authz scenario once with its Pods whole, as
// files give them, and once with the fields a live read leaves out of a Pod cleared: stdout,
// stderr and the exit code must be the same in every output format, so nothing reads those
// fields.
func TestSlimPodsExplainTheSame(t *testing.T) {
	t.Chdir(repoRoot(t))
	runs, slimmed := 0, 0
	for _, kind := range []struct{ dir, machine string }{{"cluster", "envoy"}, {"authz", FormatZtunnel}} {
		for _, dir := range scenarioDirs(t, kind.dir) {
			args := scenarioArgs(t, dir)
			for _, format := range []string{"table", "json", kind.machine} {
				cmd := append(append([]string{}, args...), "-o", format)
				explainsTheSame(t, kind.dir+"/"+filepath.Base(dir)+"/"+format, dir, cmd, slimPods, &slimmed,
					"Pods as a live read gives them")
				runs++
			}
		}
	}
	// The check means something only if some Pods had fields that a live read leaves out.
	if slimmed == 0 || runs == 0 {
		t.Fatalf("%d runs, %d Pods slimmed", runs, slimmed)
	}
	t.Logf("%d runs, %d Pods slimmed", runs, slimmed)
}
