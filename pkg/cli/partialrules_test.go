package cli

import (
	"path/filepath"
	"slices"
	"testing"

	"google.golang.org/protobuf/proto"
	typev1beta1 "istio.io/api/type/v1beta1"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/model"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/source"
)

// partialRules reads the DestinationRules that Spec.DestinationRuleInFull rejects as a live
// read returns them: in their lookup fields only (host, exportTo, workloadSelector); partial
// counts them.
func partialRules(partial *int) alterFunc {
	return func(asked source.Spec, snap *model.Snapshot) error {
		inFull := asked.DestinationRuleInFull
		if inFull == nil {
			return nil
		}
		for _, dr := range snap.DestinationRules {
			if inFull(dr.Namespace, dr.Spec.GetHost()) {
				continue
			}
			*partial++
			host, exportTo, ws := dr.Spec.Host, dr.Spec.ExportTo, dr.Spec.GetWorkloadSelector()
			proto.Reset(&dr.Spec)
			dr.Spec.Host, dr.Spec.ExportTo = host, exportTo
			if ws != nil {
				dr.Spec.WorkloadSelector = &typev1beta1.WorkloadSelector{MatchLabels: ws.MatchLabels}
			}
		}
		return nil
	}
}

// TestPartialRulesExplainTheSame runs every cluster scenario, for its own host and for the host
// of each of its DestinationRules, once with every DestinationRule in full and once with those
// the cluster command reads in part from a cluster reduced to their lookup fields: stdout,
// stderr and the exit code must be the same in every output format.
func TestPartialRulesExplainTheSame(t *testing.T) {
	t.Chdir(repoRoot(t))
	runs, partial := 0, 0
	for _, dir := range scenarioDirs(t, "cluster") {
		args := scenarioArgs(t, dir)
		snap, err := source.LoadFiles([]string{dir}, "default")
		if err != nil {
			t.Fatal(err)
		}
		hosts := []string{args[1]}
		for _, dr := range snap.DestinationRules {
			if h := dr.Spec.GetHost(); h != "" && !slices.Contains(hosts, h) {
				hosts = append(hosts, h)
			}
		}
		for _, host := range hosts {
			for _, format := range []string{"table", "json", "envoy"} {
				cmd := append([]string{args[0], host}, args[2:]...)
				cmd = append(cmd, "-o", format)
				explainsTheSame(t, filepath.Base(dir)+"/"+host+"/"+format, dir, cmd, partialRules, &partial,
					"the rules that cannot apply in part")
				runs++
			}
		}
	}
	// The check means something only if some rules were read in part.
	if partial == 0 || runs == 0 {
		t.Fatalf("%d runs, %d rules read in part", runs, partial)
	}
	t.Logf("%d runs, %d rules read in part", runs, partial)
}
