package cli

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	networkingv1 "istio.io/client-go/pkg/apis/networking/v1"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/model"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/source"
)

// unneededVirtualServices leaves out the VirtualServices that Spec.VirtualServiceNeeded
// rejects, as a live read leaves them out; it is offered each one as the JSON a list holds.
// dropped counts them.
func unneededVirtualServices(dropped *int) alterFunc {
	return func(asked source.Spec, snap *model.Snapshot) error {
		needed := asked.VirtualServiceNeeded
		if needed == nil {
			return nil
		}
		var kept []*networkingv1.VirtualService
		for _, vs := range snap.VirtualServices {
			listed, err := json.Marshal(vs)
			if err != nil {
				return err
			}
			if needed(listed) {
				kept = append(kept, vs)
				continue
			}
			*dropped++
		}
		snap.VirtualServices = kept
		return nil
	}
}

// TestUnneededVirtualServicesExplainTheSame runs the cluster command on every cluster scenario
// and on random meshes full of VirtualServices (short, qualified, upper-case and wildcard
// destinations, mirrors, TCP and TLS routes, delegates, exportTo, source namespaces, gateways,
// Sidecars that import hosts only through routes), for several hosts and clients, once with
// every VirtualService and once without those a live read leaves out: stdout, stderr and the
// exit code must be the same in every output format.
func TestUnneededVirtualServicesExplainTheSame(t *testing.T) {
	t.Chdir(repoRoot(t))
	runs, dropped := 0, 0
	for _, dir := range scenarioDirs(t, "cluster") {
		args := scenarioArgs(t, dir)
		for _, format := range []string{"table", "json"} {
			cmd := append(append([]string{}, args...), "-o", format)
			explainsTheSame(t, filepath.Base(dir)+"/"+format, dir, cmd, unneededVirtualServices, &dropped,
				"the VirtualServices a live read leaves out")
			runs++
		}
	}
	r := rand.New(rand.NewPCG(7, 11))
	hosts := [][2]string{
		{"reviews", "bookinfo"}, {"ratings.bookinfo", "bookinfo"}, {"web.frontend.svc.cluster.local", "frontend"},
		{"a.example.com", "team"}, {"b.example.com", "team"}, {"zz.example.com", "team"}, {"*.example.com", "team"},
	}
	// What the random meshes are meant to exercise: routes to subsets the rule does not define
	// (D10) and to none of some it defines (D9), a host imported only through a route (D8).
	features := []string{`"id": "D9"`, `"id": "D10"`, "only through the routes of VirtualService"}
	var seen []string
	for round := range 40 {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "mesh.yaml"), []byte(randomRoutedMesh(r)), 0o600); err != nil {
			t.Fatal(err)
		}
		for _, from := range []string{"namespace/frontend", "namespace/bookinfo"} {
			res := runWithLoad(t, fileCluster(dir, nil), "cluster", "reviews", "-n", "bookinfo", "-f", dir, "--from", from, "-o", "json")
			for _, feature := range features {
				if strings.Contains(res.stdout, feature) && !slices.Contains(seen, feature) {
					seen = append(seen, feature)
				}
			}
		}
		for _, h := range hosts {
			for _, from := range []string{"namespace/frontend", "namespace/bookinfo"} {
				format := []string{"table", "json", "envoy"}[r.IntN(3)]
				cmd := []string{"cluster", h[0], "-n", h[1], "-f", dir, "--from", from, "-o", format}
				explainsTheSame(t, fmt.Sprintf("random-%d/%s/%s/%s", round, h[0], from, format), dir, cmd, unneededVirtualServices, &dropped,
					"the VirtualServices a live read leaves out")
				runs++
			}
		}
	}
	if len(seen) != len(features) {
		t.Errorf("the random meshes showed only %q of %q", seen, features)
	}
	// The check means something only if some VirtualServices were left out.
	if dropped == 0 || runs == 0 {
		t.Fatalf("%d runs, %d VirtualServices left out", runs, dropped)
	}
	t.Logf("%d runs, %d VirtualServices left out", runs, dropped)
}

// randomRoutedMesh is a small mesh as YAML: three Services, two ServiceEntries (one a
// wildcard), DestinationRules with subsets, maybe a Sidecar, and random VirtualServices.
func randomRoutedMesh(r *rand.Rand) string {
	pick := func(xs ...string) string { return xs[r.IntN(len(xs))] }
	var b strings.Builder
	doc := func(format string, a ...any) { fmt.Fprintf(&b, "---\n"+format, a...) }
	for _, ns := range []string{"bookinfo", "frontend", "team"} {
		doc("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: %s\n", ns)
	}
	svc := func(name, ns string, ports ...string) {
		doc("apiVersion: v1\nkind: Service\nmetadata:\n  name: %s\n  namespace: %s\nspec:\n  selector:\n    app: %s\n  ports:\n", name, ns, name)
		for _, p := range ports {
			n, num, _ := strings.Cut(p, ":")
			fmt.Fprintf(&b, "  - name: %s\n    port: %s\n", n, num)
		}
	}
	svc("reviews", "bookinfo", "http:9080", "grpc:9090")
	svc("ratings", "bookinfo", "http:9080")
	svc("web", "frontend", "http:80")
	for i, v := range []string{"v1", "v2"} {
		doc("apiVersion: v1\nkind: Pod\nmetadata:\n  name: reviews-%s\n  namespace: bookinfo\n  labels:\n    app: reviews\n    version: %s\n"+
			"spec:\n  containers:\n  - name: app\n    image: reviews\nstatus:\n  phase: Running\n  podIP: 10.0.0.%d\n", v, v, i+2)
	}
	doc("apiVersion: networking.istio.io/v1\nkind: ServiceEntry\nmetadata:\n  name: ext\n  namespace: team\nspec:\n  hosts:\n  - a.example.com\n" +
		"  ports:\n  - number: 443\n    name: tls\n    protocol: TLS\n  resolution: DNS\n")
	doc("apiVersion: networking.istio.io/v1\nkind: ServiceEntry\nmetadata:\n  name: wild\n  namespace: team\nspec:\n  hosts:\n  - '*.example.com'\n" +
		"  ports:\n  - number: 443\n    name: tls\n    protocol: TLS\n  resolution: NONE\n")
	subsets := func(names ...string) string {
		out := "  subsets:\n"
		for _, n := range names {
			out += fmt.Sprintf("  - name: %s\n    labels:\n      version: %s\n", n, n)
		}
		return out
	}
	doc("apiVersion: networking.istio.io/v1\nkind: DestinationRule\nmetadata:\n  name: reviews\n  namespace: bookinfo\nspec:\n  host: reviews\n%s", subsets("v1", "v2"))
	doc("apiVersion: networking.istio.io/v1\nkind: DestinationRule\nmetadata:\n  name: ext\n  namespace: team\nspec:\n  host: a.example.com\n%s", subsets("v1"))
	doc("apiVersion: networking.istio.io/v1\nkind: DestinationRule\nmetadata:\n  name: wild\n  namespace: team\nspec:\n  host: '*.example.com'\n%s", subsets("v2"))
	switch r.IntN(4) {
	case 1:
		doc("apiVersion: networking.istio.io/v1\nkind: Sidecar\nmetadata:\n  name: default\n  namespace: frontend\nspec:\n  egress:\n  - hosts:\n    - ./*\n")
	case 2:
		doc("apiVersion: networking.istio.io/v1\nkind: Sidecar\nmetadata:\n  name: default\n  namespace: frontend\nspec:\n  egress:\n  - port:\n      number: 9080\n      protocol: HTTP\n      name: http\n    hosts:\n    - bookinfo/*\n")
	case 3:
		doc("apiVersion: networking.istio.io/v1\nkind: Sidecar\nmetadata:\n  name: default\n  namespace: frontend\nspec:\n  egress:\n  - hosts:\n    - ./*\n    - team/a.example.com\n")
	}
	vsHosts := []string{"reviews", "reviews.bookinfo.svc.cluster.local", "web", "'*'", "'*.example.com'", "a.example.com", "ratings", "'*.bookinfo.svc.cluster.local'"}
	dests := []string{"reviews", "reviews.bookinfo", "reviews.bookinfo.svc.cluster.local", "Reviews.bookinfo.svc.cluster.local", "ratings",
		"ratings.bookinfo.svc.cluster.local", "web", "web.frontend.svc.cluster.local", "a.example.com", "A.Example.com", "'*.example.com'", "b.example.com"}
	dest := func(indent string) string {
		out := fmt.Sprintf("%shost: %s\n", indent, pick(dests...))
		if s := pick("", "v1", "v2", "v9"); s != "" {
			out += fmt.Sprintf("%ssubset: %s\n", indent, s)
		}
		if p := pick("", "9080", "9090", "443"); p != "" {
			out += fmt.Sprintf("%sport:\n%s  number: %s\n", indent, indent, p)
		}
		return out
	}
	if r.IntN(2) == 0 {
		// Routes from the client's namespace to reviews: with the Sidecar importing ./* only,
		// they import reviews.
		doc("apiVersion: networking.istio.io/v1\nkind: VirtualService\nmetadata:\n  name: web-routes\n  namespace: frontend\nspec:\n  hosts:\n  - web\n"+
			"  http:\n  - route:\n    - destination:\n        host: %s\n        port:\n          number: 9080\n", pick("reviews.bookinfo", "reviews.bookinfo.svc.cluster.local"))
	}
	if r.IntN(2) == 0 {
		// A root whose own JSON does not name reviews, delegating to routes that do.
		doc("apiVersion: networking.istio.io/v1\nkind: VirtualService\nmetadata:\n  name: root-routes\n  namespace: bookinfo\nspec:\n  hosts:\n  - ratings\n" +
			"  http:\n  - delegate:\n      name: sub-routes\n      namespace: team\n")
		doc("apiVersion: networking.istio.io/v1\nkind: VirtualService\nmetadata:\n  name: sub-routes\n  namespace: team\nspec:\n"+
			"  http:\n  - route:\n    - destination:\n        host: reviews.bookinfo.svc.cluster.local\n        subset: %s\n", pick("v1", "v9"))
	}
	delegates := 0
	for i := range 1 + r.IntN(6) {
		ns := pick("bookinfo", "frontend", "team")
		var spec strings.Builder
		delegate := r.IntN(5) == 0
		if !delegate {
			spec.WriteString("  hosts:\n")
			n := 1 + r.IntN(2)
			for _, j := range r.Perm(len(vsHosts))[:n] {
				fmt.Fprintf(&spec, "  - %s\n", vsHosts[j])
			}
		}
		switch r.IntN(4) {
		case 1:
			fmt.Fprintf(&spec, "  exportTo:\n  - %s\n", pick("'.'", "frontend", "bookinfo", "'~'", "'*'"))
		case 2:
			spec.WriteString("  gateways:\n  - istio-system/ingress\n")
		}
		spec.WriteString("  http:\n")
		for range 1 + r.IntN(2) {
			spec.WriteString("  - ")
			if r.IntN(3) == 0 {
				fmt.Fprintf(&spec, "match:\n    - sourceNamespace: %s\n    ", pick("frontend", "bookinfo"))
			}
			fmt.Fprintf(&spec, "route:\n    - destination:\n%s", dest("        "))
			if r.IntN(3) == 0 {
				fmt.Fprintf(&spec, "    mirror:\n%s", dest("      "))
			}
		}
		if !delegate && delegates > 0 && r.IntN(2) == 0 {
			fmt.Fprintf(&spec, "  - delegate:\n      name: delegate-%d\n      namespace: %s\n", r.IntN(delegates), pick("bookinfo", "team"))
		}
		if r.IntN(3) == 0 {
			fmt.Fprintf(&spec, "  tcp:\n  - route:\n    - destination:\n%s", dest("        "))
		}
		name := fmt.Sprintf("vs-%d", i)
		if delegate {
			name = fmt.Sprintf("delegate-%d", delegates)
			delegates++
		}
		doc("apiVersion: networking.istio.io/v1\nkind: VirtualService\nmetadata:\n  name: %s\n  namespace: %s\n  creationTimestamp: '2024-01-01T00:00:%02dZ'\nspec:\n%s",
			name, ns, r.IntN(60), spec.String())
	}
	return b.String()
}
