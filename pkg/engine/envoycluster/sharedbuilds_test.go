package envoycluster

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/index"
	loader "github.com/mesh-explain/kubectl-mesh-explain/pkg/source"
)

// TestHostDiagnosticsMatchHost asks, in every cluster scenario, every host from the default
// sidecar of every namespace of the scenario and from the scenario's own client: HostDiagnostics,
// with the builds shared between all those proxies, must give the service and the diagnostics of
// Host, in the same order.
func TestHostDiagnosticsMatchHost(t *testing.T) {
	root := scenarioRoot(t)
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	shared := 0
	for _, e := range entries {
		dir := filepath.Join(root, e.Name())
		if _, err := os.Stat(filepath.Join(dir, "args")); !e.IsDir() || err != nil {
			continue
		}
		t.Run(e.Name(), func(t *testing.T) {
			q := scenarioQuery(t, dir)
			snap, err := loader.LoadFiles(scenarioFiles(t, dir), q.Namespace)
			if err != nil {
				t.Fatalf("loading: %v", err)
			}
			ix := index.Build(snap)
			own, err := queryProxy(ix, q)
			if err != nil {
				t.Fatal(err)
			}
			// The query's proxy, every namespace's default sidecar and every pod's sidecar (with
			// its labels, IPs and locality), the pods first and then last: a build shared by a
			// pod and a namespace is made by either.
			var namespaces, pods []*index.Proxy
			var nss []string
			for k := range snap.Sources {
				nss = append(nss, k.Namespace)
			}
			slices.Sort(nss)
			for _, ns := range slices.Compact(nss) {
				if ns == "" {
					continue
				}
				p, err := ix.Proxy("namespace", ns, "")
				if err != nil {
					t.Fatal(err)
				}
				namespaces = append(namespaces, p)
			}
			for _, pod := range snap.Pods {
				if pod.Status.PodIP == "" {
					continue
				}
				p, err := ix.Proxy("pod", pod.Namespace, pod.Name)
				if err != nil {
					t.Fatal(err)
				}
				pods = append(pods, p)
			}
			for _, proxies := range [][]*index.Proxy{
				slices.Concat([]*index.Proxy{own}, pods, namespaces),
				slices.Concat(namespaces, pods, []*index.Proxy{own}),
			} {
				builds := NewSharedBuilds(ix)
				for _, p := range proxies {
					ex := NewExplainer(ix, p)
					for _, h := range ex.Hosts() {
						hc, wantErr := ex.Host(h)
						svc, got, gotErr := ex.HostDiagnostics(h, builds)
						if !sameError(wantErr, gotErr) {
							t.Fatalf("%s from %s: Host error %v, HostDiagnostics error %v", h, p.Description, wantErr, gotErr)
						}
						if wantErr != nil {
							continue
						}
						if svc != hc.Service {
							t.Errorf("%s from %s: service %v, Host's %v", h, p.Description, svc, hc.Service)
						}
						want := slices.Clone(hc.Diagnostics)
						for _, b := range hc.Clusters {
							want = append(want, b.Diagnostics...)
						}
						if d := cmp.Diff(want, got); d != "" {
							t.Errorf("%s from %s: diagnostics differ from Host's (-Host +HostDiagnostics):\n%s", h, p.Description, d)
						}
					}
				}
				builds.mu.Lock()
				for _, b := range builds.m {
					if len(b.diags) > 0 {
						shared++
					}
				}
				builds.mu.Unlock()
			}
		})
	}
	if shared == 0 {
		t.Error("no shared build has a diagnostic: the comparison proves little")
	}
}
