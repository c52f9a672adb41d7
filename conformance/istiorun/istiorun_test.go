package istiorun

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestParseArgs(t *testing.T) {
	cases := []struct {
		in   string
		want Args
		err  bool
	}{
		{in: "cluster reviews -n bookinfo --from pod/productpage-v1 --port 9080 --subset v1",
			want: Args{Verb: "cluster", Target: "reviews", Namespace: "bookinfo", From: "pod/productpage-v1", Port: 9080, Subset: "v1"}},
		{in: "cluster reviews.bookinfo:9080", want: Args{Verb: "cluster", Target: "reviews.bookinfo", Namespace: "default", Port: 9080}},
		{in: "cluster a --port=80 -A", want: Args{Verb: "cluster", Target: "a", Namespace: "default", Port: 80, AllNamespaces: true}},
		{in: "authz pod/a -n foo", want: Args{Verb: "authz", Target: "pod/a", Namespace: "foo"}},
		{in: "authz -l app=a -n foo", want: Args{Verb: "authz", Namespace: "foo", Selector: "app=a"}},
		{in: "cluster a:80 --port 81", err: true},
		{in: "cluster", err: true},
		{in: "cluster a --bogus", err: true},
		{in: "explain a", err: true},
	}
	for _, c := range cases {
		got, err := ParseArgs(c.in)
		if c.err {
			if err == nil {
				t.Errorf("%q: want an error, got %+v", c.in, got)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%q: got %+v, %v; want %+v", c.in, got, err, c.want)
		}
	}
}

func TestResolveHost(t *testing.T) {
	sc := &Scenario{}
	sc.Kube = append(sc.Kube,
		&corev1.Service{ObjectMeta: metaOf("reviews", "bookinfo")})
	docs, err := SplitDocuments([]byte(`apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: se, namespace: default}
spec:
  hosts: ["*.example.com", "api.example.com"]
  ports: [{number: 80, name: http, protocol: HTTP}]
  resolution: NONE
`))
	if err != nil {
		t.Fatal(err)
	}
	built, err := Build(docs, "default")
	if err != nil {
		t.Fatal(err)
	}
	sc.Kube = append(sc.Kube, built.Kube...)
	for _, c := range []struct{ typed, ns, want string }{
		{"reviews", "bookinfo", "reviews.bookinfo.svc.cluster.local"},
		{"reviews.bookinfo", "default", "reviews.bookinfo.svc.cluster.local"},
		{"reviews.bookinfo.svc", "default", "reviews.bookinfo.svc.cluster.local"},
		{"Reviews.Bookinfo.svc.cluster.local.", "default", "reviews.bookinfo.svc.cluster.local"},
		{"api.example.com", "default", "api.example.com"},
		{"www.example.com", "default", "*.example.com"},
		{"unknown", "ns", "unknown.ns.svc.cluster.local"},
	} {
		if got := sc.ResolveHost(c.typed, c.ns); got != c.want {
			t.Errorf("ResolveHost(%q, %q) = %q, want %q", c.typed, c.ns, got, c.want)
		}
	}
}

func TestBuildAndEndpointSlices(t *testing.T) {
	docs, err := SplitDocuments([]byte(`apiVersion: v1
kind: Service
metadata: {name: svc}
spec:
  selector: {app: svc}
  ports:
  - {name: http, port: 80, targetPort: web}
  - {name: tcp, port: 5000}
---
apiVersion: v1
kind: Pod
metadata: {name: p1, labels: {app: svc}}
spec:
  containers: [{name: c, ports: [{name: web, containerPort: 8080}]}]
status: {podIP: 10.0.0.1}
---
apiVersion: v1
kind: Pod
metadata: {name: p2, labels: {app: svc}}
spec:
  containers: [{name: c}]
status:
  podIP: 10.0.0.2
  phase: Running
  conditions: [{type: Ready, status: "False"}]
---
apiVersion: v1
kind: Pod
metadata: {name: p3, labels: {app: svc}}
status: {phase: Succeeded, podIP: 10.0.0.3}
---
apiVersion: v1
kind: Pod
metadata: {name: other, labels: {app: other}}
status: {podIP: 10.0.0.4}
---
apiVersion: networking.istio.io/v1beta1
kind: DestinationRule
metadata: {name: dr, labels: {}}
spec: {host: svc}
`))
	if err != nil {
		t.Fatal(err)
	}
	sc, err := Build(docs, "ns1")
	if err != nil {
		t.Fatal(err)
	}
	var slices []*discoveryv1.EndpointSlice
	var svc *corev1.Service
	nsCreated := false
	for _, o := range sc.Kube {
		switch t := o.(type) {
		case *discoveryv1.EndpointSlice:
			slices = append(slices, t)
		case *corev1.Service:
			svc = t
		case *corev1.Namespace:
			nsCreated = nsCreated || t.Name == "ns1"
		}
	}
	if !nsCreated {
		t.Error("the namespace ns1 was not created")
	}
	if svc == nil || svc.Namespace != "ns1" || svc.Spec.ClusterIP == "" || svc.Spec.Ports[1].TargetPort.IntVal != 5000 {
		t.Fatalf("service not defaulted as the apiserver does: %+v", svc)
	}
	if len(slices) != 2 {
		t.Fatalf("want 2 slices (p1 with both ports, p2 with tcp only), got %d", len(slices))
	}
	byPod := map[string]*discoveryv1.EndpointSlice{}
	for _, s := range slices {
		for _, e := range s.Endpoints {
			byPod[e.TargetRef.Name] = s
		}
	}
	if s := byPod["p1"]; s == nil || len(s.Ports) != 2 || *s.Ports[0].Port != 8080 || !*s.Endpoints[0].Conditions.Ready {
		t.Errorf("p1: %+v", s)
	}
	if s := byPod["p2"]; s == nil || len(s.Ports) != 1 || *s.Ports[0].Port != 5000 || *s.Endpoints[0].Conditions.Ready {
		t.Errorf("p2: %+v", s)
	}
	if byPod["p3"] != nil || byPod["other"] != nil {
		t.Error("a terminal or unselected pod got an endpoint")
	}
	if len(sc.Configs) != 1 || sc.Configs[0].Domain != DomainSuffix || sc.Configs[0].Namespace != "ns1" ||
		sc.Configs[0].GroupVersionKind.Version != "v1" || sc.Configs[0].Labels != nil {
		t.Errorf("config not translated as istiod's CRD client does: %+v", sc.Configs)
	}
}

func TestBuildRejectsInvalid(t *testing.T) {
	docs, err := SplitDocuments([]byte(`apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: dr}
spec: {host: svc, trafficPolicy: {}}
`))
	if err != nil {
		t.Fatal(err)
	}
	_, err = Build(docs, "default")
	if _, ok := err.(*InvalidError); !ok {
		t.Fatalf("want an InvalidError, got %v", err)
	}
}

func metaOf(name, ns string) metav1.ObjectMeta { return metav1.ObjectMeta{Name: name, Namespace: ns} }
