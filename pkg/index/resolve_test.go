package index

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	networking "istio.io/api/networking/v1alpha3"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/explain"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/provenance"
)

func TestResolveHost(t *testing.T) {
	snap := snapshot(
		kubeSvc("reviews", "bookinfo", "http:9080"),
		kubeSvc("ratings", "bookinfo", "http:9080"),
		kubeSvc("reviews", "staging", "http:9080"),
		kubeSvc("details", "svc", "http:9080"),
		serviceEntry("wild", "egress", networking.ServiceEntry_NONE, "*.example.com"),
		serviceEntry("api", "egress", networking.ServiceEntry_DNS, "api.example.com"),
		serviceEntry("dup-a", "team-a", networking.ServiceEntry_DNS, "shared.example.org"),
		serviceEntry("dup-b", "team-b", networking.ServiceEntry_DNS, "shared.example.org"),
		serviceEntry("upper", "egress", networking.ServiceEntry_DNS, "GRPC"),
		serviceEntry("mixed", "egress", networking.ServiceEntry_DNS, "Db.Example.com"),
		serviceEntry("lower", "egress", networking.ServiceEntry_DNS, "db.example.com"),
		serviceEntry("spaced", "egress", networking.ServiceEntry_DNS, "a: 1\nb: 2\n"),
	)
	ix := Build(snap)
	svcRef := func(ns, name string) provenance.Ref {
		return provenance.Ref{Kind: "Service", Namespace: ns, Name: name}
	}
	seRef := func(ns, name string) provenance.Ref {
		return provenance.Ref{Kind: "ServiceEntry", Namespace: ns, Name: name}
	}
	cases := []struct {
		name      string
		host      string
		namespace string
		want      []provenance.Ref
		wantErr   string
	}{
		{"short name resolves in the given namespace", "reviews", "staging", []provenance.Ref{svcRef("staging", "reviews")}, ""},
		{"name.namespace", "reviews.bookinfo", "staging", []provenance.Ref{svcRef("bookinfo", "reviews")}, ""},
		{"name.namespace.svc", "reviews.bookinfo.svc", "", []provenance.Ref{svcRef("bookinfo", "reviews")}, ""},
		// name.namespace with the namespace svc: the forms a sidecar's DNS proxy resolves
		// (generateAltHosts, pkg/dns/client/dns.go) make it the Service details of namespace svc,
		// not details.svc.cluster.local.
		{"name.namespace where the namespace is svc", "details.svc", "", []provenance.Ref{svcRef("svc", "details")}, ""},
		// name.namespace.svc.cluster is no name istiod or a DNS proxy gives a Service.
		{"name.namespace.svc.cluster is taken literally", "reviews.bookinfo.svc.cluster", "", nil,
			`host "reviews.bookinfo.svc.cluster" not found (did you mean one of reviews.bookinfo.svc.cluster.local, reviews.staging.svc.cluster.local?)`},
		{"full hostname, trailing dot and case ignored", "Reviews.bookinfo.svc.cluster.local.", "", []provenance.Ref{svcRef("bookinfo", "reviews")}, ""},
		{"ServiceEntry host", "api.example.com", "", []provenance.Ref{seRef("egress", "api")}, ""},
		{"wildcard ServiceEntry host", "*.example.com", "", []provenance.Ref{seRef("egress", "wild")}, ""},
		{"host only a wildcard ServiceEntry covers", "other.example.com", "", []provenance.Ref{seRef("egress", "wild")}, ""},
		// A host istiod keeps as written: a short name in capitals is no Service name, and
		// hosts that differ in case are two hosts.
		{"ServiceEntry host in capitals, one label", "GRPC", "bar", []provenance.Ref{seRef("egress", "upper")}, ""},
		{"ServiceEntry host in mixed case", "Db.Example.com", "", []provenance.Ref{seRef("egress", "mixed")}, ""},
		{"the lower-case host of the same name", "db.example.com", "", []provenance.Ref{seRef("egress", "lower")}, ""},
		{"a host validation rejects, looked up as it is written", "a: 1\nb: 2\n", "", []provenance.Ref{seRef("egress", "spaced")}, ""},
		{"one service per namespace that defines the host", "shared.example.org", "", []provenance.Ref{seRef("team-a", "dup-a"), seRef("team-b", "dup-b")}, ""},
		{"short name missing from the namespace suggests the same name elsewhere", "reviews", "frontend", nil,
			`host "reviews" not found (did you mean one of reviews.bookinfo.svc.cluster.local, reviews.staging.svc.cluster.local?)`},
		{"typo suggests the nearest hostname", "reveiws.bookinfo.svc.cluster.local", "", nil,
			`host "reveiws.bookinfo.svc.cluster.local" not found (did you mean reviews.bookinfo.svc.cluster.local?)`},
		{"nothing similar", "zzz", "frontend", nil,
			`host "zzz" not found (no Service or ServiceEntry has a similar host; a short name is looked up in namespace frontend)`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ix.ResolveHost(tc.host, tc.namespace)
			if tc.wantErr != "" {
				var nf *explain.NotFoundError
				if !errors.As(err, &nf) {
					t.Fatalf("err = %v, want a NotFoundError", err)
				}
				if err.Error() != tc.wantErr {
					t.Errorf("err = %q\nwant  %q", err.Error(), tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var refs []provenance.Ref
			for _, s := range got {
				refs = append(refs, s.Ref)
			}
			if diff := cmp.Diff(tc.want, refs); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestProxy(t *testing.T) {
	web := withPod(pod("web-1", "frontend", "10.1.0.1", map[string]string{"app": "web", "istio-locality": "us.zone-a"}), func(p *corev1.Pod) {
		p.Status.PodIPs = []corev1.PodIP{{IP: "10.1.0.1"}, {IP: "fd00::1"}}
	})
	ix := Build(snapshot(web, pod("api-7f9", "backend", "10.1.0.2", nil)))
	cases := []struct {
		name              string
		kind, ns, podName string
		want              *Proxy
		wantErr           string
	}{
		{
			name: "pod proxy takes the pod's namespace, labels and IPs", kind: "pod", ns: "frontend", podName: "web-1",
			want: &Proxy{
				Namespace: "frontend", Labels: web.Labels, IPs: []string{"10.1.0.1", "fd00::1"},
				Pod: &provenance.Ref{Kind: "Pod", Namespace: "frontend", Name: "web-1"}, Locality: "us/zone-a",
				Description: "sidecar of pod frontend/web-1",
			},
		},
		{
			name: "namespace proxy has no labels", kind: "namespace", ns: "frontend",
			want: &Proxy{Namespace: "frontend", Description: "sidecar in namespace frontend"},
		},
		{
			name: "empty kind is a namespace proxy", kind: "", ns: "",
			want: &Proxy{Namespace: "default", Description: "sidecar in namespace default"},
		},
		{
			name: "missing pod suggests the same name in another namespace", kind: "pod", ns: "frontend", podName: "api-7f9",
			wantErr: "pod frontend/api-7f9 not found (a pod with that name is in backend/api-7f9; set the namespace)",
		},
		{
			name: "missing pod suggests a similar name", kind: "pod", ns: "frontend", podName: "web",
			wantErr: "pod frontend/web not found (did you mean frontend/web-1?)",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ix.Proxy(tc.kind, tc.ns, tc.podName)
			if tc.wantErr != "" {
				var nf *explain.NotFoundError
				if !errors.As(err, &nf) || err.Error() != tc.wantErr {
					t.Fatalf("err = %v, want NotFoundError %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	// A waypoint's pod is not a client: istiod builds its clusters otherwise.
	t.Run("waypoint pod is refused", func(t *testing.T) {
		wp := withPod(pod("wp-1", "edge", "10.1.0.9", nil), func(p *corev1.Pod) {
			p.Spec.Containers = []corev1.Container{{Name: "istio-proxy", Args: []string{"proxy", "waypoint"}}}
		})
		var iq *explain.InvalidQueryError
		_, err := Build(snapshot(wp)).Proxy("pod", "edge", "wp-1")
		if !errors.As(err, &iq) || !strings.Contains(err.Error(), "pod edge/wp-1 is ") ||
			!strings.Contains(err.Error(), "its istio-proxy runs as a waypoint (spec.containers[0].args[1])") {
			t.Errorf("err = %v, want InvalidQueryError naming the proxy's type", err)
		}
	})
	// A gateway's pod is a router: the field that says so is kept for the origins.
	t.Run("router pod is a router proxy", func(t *testing.T) {
		gw := withPod(pod("gw-1", "edge", "10.1.0.9", nil), func(p *corev1.Pod) {
			p.Spec.Containers = []corev1.Container{{Name: "istio-proxy", Args: []string{"proxy", "router"}}}
		})
		p, err := Build(snapshot(gw)).Proxy("pod", "edge", "gw-1")
		if err != nil || !p.Router || p.RouterField != "spec.containers[0].args[1]" || p.Description != "gateway (router) of pod edge/gw-1" {
			t.Errorf("proxy = %+v, %v; want a router named by spec.containers[0].args[1]", p, err)
		}
	})
	t.Run("unknown kind is an invalid query", func(t *testing.T) {
		var iq *explain.InvalidQueryError
		if _, err := ix.Proxy("statefulset", "frontend", "web"); !errors.As(err, &iq) {
			t.Errorf("err = %v, want InvalidQueryError", err)
		}
	})
}

// deployment/NAME is the sidecar of the Deployment's first pod by name; without the Deployment,
// of the first pod its ReplicaSets own.
func TestDeploymentProxy(t *testing.T) {
	deploy := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "frontend"},
		Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}}
	owned := func(name, hash string) *corev1.Pod {
		return withPod(pod(name, "frontend", "10.1.0.9", map[string]string{"app": "api", "pod-template-hash": hash}), func(p *corev1.Pod) {
			p.OwnerReferences = []metav1.OwnerReference{{Kind: "ReplicaSet", Name: "api-" + hash}}
		})
	}
	ix := Build(snapshot(deploy,
		pod("web-b", "frontend", "10.1.0.2", map[string]string{"app": "web"}),
		pod("web-a", "frontend", "10.1.0.1", map[string]string{"app": "web", "version": "v1"}),
		pod("web-c", "backend", "10.1.0.3", map[string]string{"app": "web"}),
		owned("api-5d8f-x", "5d8f"),
	))
	got, err := ix.Proxy("deployment", "frontend", "web")
	if err != nil || got.Pod == nil || got.Pod.Name != "web-a" || got.Labels["version"] != "v1" || !slices.Equal(got.IPs, []string{"10.1.0.1"}) ||
		got.Description != "sidecar of pod frontend/web-a (the first of the 2 pods of deployment web)" {
		t.Errorf("deployment/web: %+v, %v", got, err)
	}
	got, err = ix.Proxy("deployment", "frontend", "api")
	if err != nil || got.Pod == nil || got.Pod.Name != "api-5d8f-x" || got.Description != "sidecar of pod frontend/api-5d8f-x (the pod of deployment api)" {
		t.Errorf("deployment/api through its ReplicaSet: %+v, %v", got, err)
	}
	var nf *explain.NotFoundError
	if _, err := ix.Proxy("deployment", "backend", "web"); !errors.As(err, &nf) || nf.What != "deployment backend/web" {
		t.Errorf("deployment/web in backend: %v", err)
	}
	empty := Build(snapshot(deploy))
	if _, err := empty.Proxy("deployment", "frontend", "web"); !errors.As(err, &nf) || nf.What != "pods of deployment frontend/web" || !strings.Contains(nf.Hint, "app=web") {
		t.Errorf("deployment/web without pods: %v", err)
	}
}

func TestRuleMayApply(t *testing.T) {
	for _, tc := range []struct {
		host, ns, ruleHost, ruleNs string
		want                       bool
	}{
		{"reviews", "bookinfo", "reviews", "bookinfo", true},
		{"reviews", "bookinfo", "reviews.bookinfo.svc.cluster.local", "other", true},
		{"reviews.bookinfo.svc.cluster.local", "x", "reviews", "bookinfo", true},
		{"Reviews.Bookinfo.", "x", "REVIEWS.bookinfo.svc.cluster.local", "y", true},
		{"reviews.bookinfo", "x", "reviews.bookinfo.svc.cluster.local", "y", true},
		{"reviews", "bookinfo", "reviews", "other", false},
		{"reviews", "bookinfo", "ratings", "bookinfo", false},
		{"reviews", "bookinfo", "", "bookinfo", false},
		{"reviews", "bookinfo", "*.cluster.local", "istio-system", true},
		{"reviews", "bookinfo", "*", "istio-system", true},
		{"api.example.com", "x", "*.example.com", "y", true},
		{"api.example.com", "x", "api.example.com", "y", true},
		{"api.example.com", "x", "web.example.com", "y", false},
		{"*.example.com", "x", "web.example.com", "y", true},
	} {
		if got := RuleMayApply(tc.host, tc.ns, tc.ruleHost, tc.ruleNs); got != tc.want {
			t.Errorf("RuleMayApply(%q, %q, %q, %q) = %v, want %v", tc.host, tc.ns, tc.ruleHost, tc.ruleNs, got, tc.want)
		}
	}
}

// A gateway's proxy gets its namespace's default scope whatever the Sidecars; a sidecar with
// the same labels in the same namespace gets the Sidecar's (the two are kept apart).
func TestRouterIgnoresSidecars(t *testing.T) {
	labels := map[string]string{"app": "edge"}
	side := pod("side-1", "edge", "10.1.0.8", labels)
	gw := withPod(pod("gw-1", "edge", "10.1.0.9", labels), func(p *corev1.Pod) {
		p.Spec.Containers = []corev1.Container{{Name: "istio-proxy", Args: []string{"proxy", "router"}}}
	})
	ix := Build(snapshot(side, gw, kubeSvc("reviews", "bookinfo", "http:9080"),
		sidecar("default", "edge", nil, egress(0, "./*")), sidecar("root", "istio-system", nil, egress(0, "./*"))))
	const host = "reviews.bookinfo.svc.cluster.local"
	for _, name := range []string{"side-1", "gw-1", "side-1"} {
		p, err := ix.Proxy("pod", "edge", name)
		if err != nil {
			t.Fatal(err)
		}
		svc, _, _ := ix.ServiceForProxy(p, host)
		if (svc != nil) != p.Router {
			t.Errorf("%s (router %v): %s visible: %v", name, p.Router, host, svc != nil)
		}
	}
}
