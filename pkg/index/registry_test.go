package index

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	networking "istio.io/api/networking/v1alpha3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/provenance"
)

func TestConvertProtocol(t *testing.T) {
	str := func(s string) *string { return &s }
	cases := []struct {
		name  string
		port  int32
		pname string
		proto corev1.Protocol
		app   *string
		want  Protocol
	}{
		{"port name prefix before the dash", 9080, "http-web", corev1.ProtocolTCP, nil, ProtocolHTTP},
		{"grpc-web prefix is checked before the dash", 8080, "grpc-web-api", corev1.ProtocolTCP, nil, ProtocolGRPCWeb},
		{"appProtocol wins over the port name", 8080, "tcp-db", corev1.ProtocolTCP, str("http2"), ProtocolHTTP2},
		{"appProtocol kubernetes.io/h2c is HTTP2", 8080, "", corev1.ProtocolTCP, str("kubernetes.io/h2c"), ProtocolHTTP2},
		{"appProtocol kubernetes.io/wss is HTTPS", 8080, "", corev1.ProtocolTCP, str("kubernetes.io/wss"), ProtocolHTTPS},
		{"unnamed port is sniffed", 9090, "", corev1.ProtocolTCP, nil, ProtocolAuto},
		{"unknown prefix is sniffed", 9090, "web", corev1.ProtocolTCP, nil, ProtocolAuto},
		{"unnamed well-known port 3306 is TCP", 3306, "", corev1.ProtocolTCP, nil, ProtocolTCP},
		{"unnamed well-known port 53 is TCP", 53, "", corev1.ProtocolTCP, nil, ProtocolTCP},
		{"UDP port whatever its name", 53, "http-dns", corev1.ProtocolUDP, nil, ProtocolUDP},
		{"prefix is case-insensitive", 80, "HTTP-x", corev1.ProtocolTCP, nil, ProtocolHTTP},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := ConvertProtocol(tc.port, tc.pname, tc.proto, tc.app); got != tc.want {
				t.Errorf("ConvertProtocol = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestConvertKubeService(t *testing.T) {
	v1 := pod("reviews-v1", "bookinfo", "10.1.0.1", map[string]string{"app": "reviews", "version": "v1", "topology.istio.io/locality": "us-east1.zone-a"})
	v1.Spec.Containers = []corev1.Container{{Name: "app", Ports: []corev1.ContainerPort{{Name: "web", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}}}}
	v2 := pod("reviews-v2", "bookinfo", "10.1.0.2", map[string]string{"app": "reviews", "version": "v2", "security.istio.io/tlsMode": ""})
	other := pod("ratings-v1", "bookinfo", "10.1.0.3", map[string]string{"app": "ratings"})
	done := withPod(pod("reviews-old", "bookinfo", "10.1.0.4", map[string]string{"app": "reviews"}), func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded })
	svc := withSvc(kubeSvc("reviews", "bookinfo", "http:9080", "9090"), func(s *corev1.Service) {
		s.Spec.Ports = append(s.Spec.Ports, corev1.ServicePort{Name: "grpc-named", Port: 7070, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromString("web")})
		s.Annotations = map[string]string{"networking.istio.io/exportTo": "., frontend", "alpha.istio.io/kubernetes-serviceaccounts": "legacy"}
		s.Labels = map[string]string{"app": "reviews"}
	})

	v1ep := func(port uint32) Endpoint {
		ep := podEndpoint(v1, port)
		ep.Labels["topology.kubernetes.io/region"] = "us-east1"
		ep.Labels["topology.kubernetes.io/zone"] = "zone-a"
		ep.Locality = "us-east1/zone-a"
		return ep
	}
	endpoints := map[uint32][]Endpoint{
		9080: {v1ep(9080), podEndpoint(v2, 9080)},
		9090: {v1ep(9090), podEndpoint(v2, 9090)},
		7070: {v1ep(8080)},
	}
	want := &Service{
		Hostname: "reviews.bookinfo.svc.cluster.local", Namespace: "bookinfo", Name: "reviews",
		Ref:        provenance.Ref{Kind: "Service", Namespace: "bookinfo", Name: "reviews"},
		Kubernetes: true,
		Ports: []Port{
			{Name: "http", Number: 9080, Protocol: ProtocolHTTP, TargetPort: 9080},
			{Name: "", Number: 9090, Protocol: ProtocolAuto, TargetPort: 9090},
			{Name: "grpc-named", Number: 7070, Protocol: ProtocolGRPC, TargetPortName: "web"},
		},
		Resolution:  ClientSideLB,
		Labels:      map[string]string{"app": "reviews"},
		Annotations: svc.Annotations,
		Endpoints:   endpoints,
		ServiceAccounts: []string{
			"spiffe://cluster.local/ns/bookinfo/sa/legacy",
			"spiffe://cluster.local/ns/bookinfo/sa/sa-reviews-v1",
			"spiffe://cluster.local/ns/bookinfo/sa/sa-reviews-v2",
		},
		ExportTo:     []string{".", "frontend"},
		CreationTime: epoch,
		Selector:     map[string]string{"app": "reviews"},
		Sources:      []provenance.Ref{{Kind: "Service", Namespace: "bookinfo", Name: "reviews"}},
	}
	ix := Build(snapshot(svc, v1, v2, other, done))
	got, err := ix.ResolveHost("reviews", "bookinfo")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]*Service{want}, got, cmpopts.EquateEmpty(), ignoreWorkload); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestConvertKubeServiceResolution(t *testing.T) {
	cases := []struct {
		name         string
		svc          *corev1.Service
		wantRes      Resolution
		wantExternal bool
		wantAlias    string
		wantUnknown  bool
	}{
		{"ClusterIP service is ClientSideLB", kubeSvc("a", "ns", "http:80"), ClientSideLB, false, "", false},
		{"headless service is Passthrough", withSvc(kubeSvc("a", "ns", "http:80"), headless), Passthrough, false, "", false},
		{"ExternalName service is an Alias and MESH_EXTERNAL", withSvc(kubeSvc("a", "ns", "http:80"), func(s *corev1.Service) {
			s.Spec.Type, s.Spec.ExternalName, s.Spec.ClusterIP, s.Spec.Selector = corev1.ServiceTypeExternalName, "b.other.svc.cluster.local", "", nil
		}), Alias, true, "b.other.svc.cluster.local", false},
		{"service without selector has endpoints the snapshot cannot know", withSvc(kubeSvc("a", "ns", "http:80"), func(s *corev1.Service) { s.Spec.Selector = nil }), ClientSideLB, false, "", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			svcs, err := Build(snapshot(tc.svc)).ResolveHost("a", "ns")
			if err != nil {
				t.Fatal(err)
			}
			s := svcs[0]
			got := []any{s.Resolution, s.MeshExternal, s.ExternalName, s.EndpointsUnknown}
			if diff := cmp.Diff([]any{tc.wantRes, tc.wantExternal, tc.wantAlias, tc.wantUnknown}, got); diff != "" {
				t.Errorf("resolution, external, alias, unknown (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAddServiceAccountsTrustDomainAliases(t *testing.T) {
	ix := Build(snapshot(
		withMesh(func(m *meshConfig) { m.TrustDomain, m.TrustDomainAliases = "td1", []string{"old-td"} }),
		kubeSvc("reviews", "bookinfo", "http:9080"),
		pod("reviews-v1", "bookinfo", "10.1.0.1", map[string]string{"app": "reviews"}),
	))
	svcs, _ := ix.ResolveHost("reviews", "bookinfo")
	want := []string{"spiffe://old-td/ns/bookinfo/sa/sa-reviews-v1", "spiffe://td1/ns/bookinfo/sa/sa-reviews-v1"}
	if diff := cmp.Diff(want, svcs[0].ServiceAccounts); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestConvertServiceEntry(t *testing.T) {
	seRef := provenance.Ref{Kind: "ServiceEntry", Namespace: "ext", Name: "api"}
	vm := workloadEntry("vm-1", "ext", "10.9.0.1", map[string]string{"app": "api", "version": "v1"}, "vm-sa")
	vm.Spec.Ports = map[string]uint32{"tls": 9443}
	dnsVM := workloadEntry("vm-dns", "ext", "vm.example.com", map[string]string{"app": "api"}, "")
	apiPod := pod("api-1", "ext", "10.1.0.9", map[string]string{"app": "api"})
	cases := []struct {
		name      string
		se        any
		host      string
		wantRes   Resolution
		wantEps   map[uint32][]Endpoint
		wantSAs   []string
		wantHosts int
	}{
		{
			name: "DNS ServiceEntry without endpoints resolves its own host, one endpoint per port",
			se: withSE(serviceEntry("api", "ext", networking.ServiceEntry_DNS, "api.example.com", "api2.example.com"), func(s *networking.ServiceEntry) {
				s.Ports = append(s.Ports, &networking.ServicePort{Number: 80, Name: "http", Protocol: "HTTP", TargetPort: 8080})
			}),
			host: "api2.example.com", wantRes: DNSLB,
			wantEps: map[uint32][]Endpoint{
				443: {{Address: "api2.example.com", Port: 443, TLSMode: "disabled", Ref: seRef}},
				80:  {{Address: "api2.example.com", Port: 8080, TLSMode: "disabled", Ref: seRef}},
			},
		},
		{
			name: "inline endpoints use the named port, then targetPort, then the port number",
			se: withSE(serviceEntry("api", "ext", networking.ServiceEntry_STATIC, "api.example.com"), func(s *networking.ServiceEntry) {
				s.Endpoints = []*networking.WorkloadEntry{{Address: "1.2.3.4", Ports: map[string]uint32{"tls": 8443}, Labels: map[string]string{"v": "1"}}, {Address: "1.2.3.5", ServiceAccount: "ext-sa"}}
				s.SubjectAltNames = []string{"spiffe://other/ns/x/sa/y"}
			}),
			host: "api.example.com", wantRes: ClientSideLB,
			wantEps: map[uint32][]Endpoint{443: {
				{Address: "1.2.3.4", Port: 8443, Labels: map[string]string{"v": "1", "topology.istio.io/cluster": "Kubernetes"}, TLSMode: "disabled", Ref: seRef},
				{Address: "1.2.3.5", Port: 443, Labels: map[string]string{"topology.istio.io/cluster": "Kubernetes"}, ServiceAccount: "spiffe://cluster.local/ns/ext/sa/ext-sa", TLSMode: "istio", TLSModeIstio: true, Ref: seRef},
			}},
			wantSAs: []string{"spiffe://cluster.local/ns/ext/sa/ext-sa", "spiffe://other/ns/x/sa/y"},
		},
		{
			name: "workloadSelector selects pods and WorkloadEntries of the namespace, hostname addresses only for DNS",
			se: withSE(serviceEntry("api", "ext", networking.ServiceEntry_STATIC, "api.example.com"), func(s *networking.ServiceEntry) {
				s.WorkloadSelector = &networking.WorkloadSelector{Labels: map[string]string{"app": "api"}}
			}),
			host: "api.example.com", wantRes: ClientSideLB,
			wantEps: map[uint32][]Endpoint{443: {
				podEndpoint(apiPod, 443),
				{Address: "10.9.0.1", Port: 9443, Labels: map[string]string{"app": "api", "version": "v1", "topology.istio.io/cluster": "Kubernetes"}, ServiceAccount: "spiffe://cluster.local/ns/ext/sa/vm-sa", TLSMode: "istio", TLSModeIstio: true,
					Ref: provenance.Ref{Kind: "WorkloadEntry", Namespace: "ext", Name: "vm-1"}},
			}},
			wantSAs: []string{"spiffe://cluster.local/ns/ext/sa/sa-api-1", "spiffe://cluster.local/ns/ext/sa/vm-sa"},
		},
		{
			name: "DNS ServiceEntry whose workloadSelector selects nothing has no endpoints",
			se: withSE(serviceEntry("api", "ext", networking.ServiceEntry_DNS, "api.example.com"), func(s *networking.ServiceEntry) {
				s.WorkloadSelector = &networking.WorkloadSelector{Labels: map[string]string{"app": "nothing"}}
			}),
			host: "api.example.com", wantRes: DNSLB,
		},
		{
			name: "resolution NONE is Passthrough",
			se:   serviceEntry("api", "ext", networking.ServiceEntry_NONE, "api.example.com"),
			host: "api.example.com", wantRes: Passthrough,
		},
		{
			name: "resolution DNS_ROUND_ROBIN",
			se: withSE(serviceEntry("api", "ext", networking.ServiceEntry_DNS_ROUND_ROBIN, "api.example.com"), func(s *networking.ServiceEntry) {
				s.Endpoints = []*networking.WorkloadEntry{{Address: "a.example.com"}}
			}),
			host: "api.example.com", wantRes: DNSRoundRobinLB,
			wantEps: map[uint32][]Endpoint{443: {{Address: "a.example.com", Port: 443, Labels: map[string]string{"topology.istio.io/cluster": "Kubernetes"}, TLSMode: "disabled", Ref: seRef}}},
		},
		{
			name: "resolution DYNAMIC_DNS on a wildcard host",
			se:   serviceEntry("api", "ext", networking.ServiceEntry_DYNAMIC_DNS, "*.example.com"),
			host: "*.example.com", wantRes: DynamicDNS,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ix := Build(snapshot(tc.se, vm, dnsVM, apiPod))
			svcs, err := ix.ResolveHost(tc.host, "ext")
			if err != nil {
				t.Fatal(err)
			}
			s := svcs[0]
			if s.Resolution != tc.wantRes {
				t.Errorf("resolution = %v, want %v", s.Resolution, tc.wantRes)
			}
			if diff := cmp.Diff(tc.wantEps, s.Endpoints, cmpopts.EquateEmpty(), ignoreWorkload); diff != "" {
				t.Errorf("endpoints (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantSAs, s.ServiceAccounts, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("service accounts (-want +got):\n%s", diff)
			}
			if !s.MeshExternal || s.Kubernetes || s.Ref != seRef {
				t.Errorf("external=%v kubernetes=%v ref=%v", s.MeshExternal, s.Kubernetes, s.Ref)
			}
		})
	}
}

func TestHostnameAndNamespaceDuplicates(t *testing.T) {
	host := "reviews.bookinfo.svc.cluster.local"
	seOld := withSEMeta(withSE(serviceEntry("old", "bookinfo", networking.ServiceEntry_STATIC, host), func(s *networking.ServiceEntry) {
		s.Ports = []*networking.ServicePort{{Number: 9080, Name: "http", Protocol: "HTTP"}}
		s.Location = networking.ServiceEntry_MESH_INTERNAL
	}), func(m *metav1.ObjectMeta) { m.CreationTimestamp = at(1) })
	seNew := withSEMeta(withSE(serviceEntry("new", "bookinfo", networking.ServiceEntry_STATIC, host), func(s *networking.ServiceEntry) {
		s.Ports = []*networking.ServicePort{{Number: 9443, Name: "tls", Protocol: "TLS"}}
		s.Location = networking.ServiceEntry_MESH_INTERNAL
	}), func(m *metav1.ObjectMeta) { m.CreationTimestamp = at(2) })
	cases := []struct {
		name      string
		objs      []any
		wantRef   provenance.Ref
		wantPorts []uint32
	}{
		{
			name:      "Kubernetes Service wins over a ServiceEntry for the same host and namespace",
			objs:      []any{seOld, kubeSvc("reviews", "bookinfo", "http:9080")},
			wantRef:   provenance.Ref{Kind: "Service", Namespace: "bookinfo", Name: "reviews"},
			wantPorts: []uint32{9080},
		},
		{
			name:      "ServiceEntries for the same host and namespace merge their ports into the oldest",
			objs:      []any{seNew, seOld},
			wantRef:   provenance.Ref{Kind: "ServiceEntry", Namespace: "bookinfo", Name: "old"},
			wantPorts: []uint32{9080, 9443},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			svcs, err := Build(snapshot(tc.objs...)).ResolveHost(host, "bookinfo")
			if err != nil || len(svcs) != 1 {
				t.Fatalf("got %v, %v", svcs, err)
			}
			var ports []uint32
			for _, p := range svcs[0].Ports {
				ports = append(ports, p.Number)
			}
			if svcs[0].Ref != tc.wantRef {
				t.Errorf("ref = %v, want %v", svcs[0].Ref, tc.wantRef)
			}
			if diff := cmp.Diff(tc.wantPorts, ports); diff != "" {
				t.Errorf("ports (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPodContainerPorts(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	port := func(name string, n int32, proto corev1.Protocol) corev1.ContainerPort {
		return corev1.ContainerPort{Name: name, ContainerPort: n, Protocol: proto}
	}
	// Spare capacity: an append to the pod's own list would write there.
	app := append(make([]corev1.ContainerPort, 0, 4), port("http", 8080, ""), port("dns", 53, corev1.ProtocolUDP))
	sidecar := []corev1.ContainerPort{port("http", 9999, ""), port("admin", 15000, corev1.ProtocolTCP)}
	cases := []struct {
		name      string
		spec      corev1.PodSpec
		wantPorts []corev1.ContainerPort
		wantMap   map[string]uint32
	}{
		{name: "no ports", spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "a"}}}},
		{
			name:      "one container",
			spec:      corev1.PodSpec{Containers: []corev1.Container{{Name: "a"}, {Name: "b", Ports: app}}},
			wantPorts: app, wantMap: map[string]uint32{"http": 8080},
		},
		{
			name: "containers, then native sidecars; the first name wins; plain init containers do not count",
			spec: corev1.PodSpec{
				Containers: []corev1.Container{{Name: "a", Ports: app}},
				InitContainers: []corev1.Container{
					{Name: "init", Ports: []corev1.ContainerPort{port("init", 1, "")}},
					{Name: "sidecar", RestartPolicy: &always, Ports: sidecar},
				},
			},
			wantPorts: append(append([]corev1.ContainerPort{}, app...), sidecar...),
			wantMap:   map[string]uint32{"http": 8080, "admin": 15000},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			appBefore, sidecarBefore := append([]corev1.ContainerPort{}, app[:cap(app)]...), append([]corev1.ContainerPort{}, sidecar...)
			got := podContainerPorts(&corev1.Pod{Spec: tc.spec})
			if diff := cmp.Diff(tc.wantPorts, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("ports (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantMap, podPortMap(got), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("port map (-want +got):\n%s", diff)
			}
			if !cmp.Equal(appBefore, app[:cap(app)]) || !cmp.Equal(sidecarBefore, sidecar) {
				t.Errorf("the pod's port lists changed: %v %v", app, sidecar)
			}
		})
	}
}
