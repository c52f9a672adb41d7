package waypointauthz

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/mesh-explain/kubectl-mesh-explain/internal/testkit"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/model"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/source"
)

// loadScenario loads every input of a waypoint scenario folder.
func loadScenario(t *testing.T, name string) *model.Snapshot {
	t.Helper()
	dir := filepath.Join(testkit.RepoRoot(t), "testdata", "scenarios", "waypoint", name)
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".yaml") {
			files = append(files, filepath.Join(dir, e.Name()))
		}
	}
	snap, err := source.LoadFiles(files, "app")
	if err != nil {
		t.Fatal(err)
	}
	return snap
}

func podOf(t *testing.T, snap *model.Snapshot, ns, name string) *corev1.Pod {
	t.Helper()
	for _, p := range snap.Pods {
		if p.Namespace == ns && p.Name == name {
			return p
		}
	}
	t.Fatalf("no pod %s/%s", ns, name)
	return nil
}

// TestPodWaypoints pins the waypoints bound in front of a pod, and the service accounts that
// make their identity.
func TestPodWaypoints(t *testing.T) {
	cases := []struct {
		scenario, ns, pod string
		// want is "via -> ns/name sa1,sa2 (from)" per waypoint; none: no waypoint.
		want []string
	}{
		{"bind-service", "app", "reviews-v1", []string{"Service app/reviews -> app/waypoint waypoint (pods)"}},
		{"bind-service", "app", "ratings-v1", nil},
		{"bind-service", "app", "waypoint-7d9f8c6b5-abcde", nil},
		{"bind-pod-workload-waypoint", "app", "reviews-v1", []string{"Pod app/reviews-v1 -> app/waypoint waypoint (pods)"}},
		{"use-waypoint-namespace-same-only", "other", "details-v1", nil},
		{"gateway-without-addresses", "app", "reviews-v1", []string{"Service app/reviews -> app/waypoint waypoint (pods, not deployed)"}},
	}
	for _, tc := range cases {
		t.Run(tc.scenario+"/"+tc.pod, func(t *testing.T) {
			snap := loadScenario(t, tc.scenario)
			var got []string
			for _, p := range PodWaypoints(snap, podOf(t, snap, tc.ns, tc.pod)) {
				from := "pods"
				if !p.FromPods {
					from = "Gateway"
				}
				if !p.Deployed {
					from += ", not deployed"
				}
				got = append(got, p.Via()+" -> "+p.Namespace+"/"+p.Name+" "+strings.Join(p.ServiceAccounts, ",")+" ("+from+")")
			}
			if strings.Join(got, "; ") != strings.Join(tc.want, "; ") {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}
