package meshgen

import (
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"strconv"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"
	networking "istio.io/api/networking/v1alpha3"
	security "istio.io/api/security/v1beta1"
	typev1beta1 "istio.io/api/type/v1beta1"
	networkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	securityv1 "istio.io/client-go/pkg/apis/security/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// RootNamespace is the mesh root namespace (MeshConfig rootNamespace) and the namespace of
// the mesh ConfigMap.
const RootNamespace = "istio-system"

// DomainSuffix is the cluster domain of the generated Service hosts.
const DomainSuffix = "cluster.local"

// MeshConfigYAML is the `mesh` key of the generated ConfigMap istio-system/istio.
const MeshConfigYAML = `rootNamespace: istio-system
trustDomain: cluster.local
enableAutoMtls: true
accessLogFile: /dev/stdout
defaultConfig:
  discoveryAddress: istiod.istio-system.svc:15012
`

// Config says what to generate.
type Config struct {
	// Seed makes the mesh reproducible: the same seed and sizes give the same objects.
	Seed  uint64
	Sizes Sizes
}

// Mesh is a generated mesh. Every slice is in index order.
type Mesh struct {
	Config Config

	Namespaces            []*corev1.Namespace
	Nodes                 []*corev1.Node
	ConfigMaps            []*corev1.ConfigMap
	Services              []*corev1.Service
	Pods                  []*corev1.Pod
	DestinationRules      []*networkingv1.DestinationRule
	VirtualServices       []*networkingv1.VirtualService
	PeerAuthentications   []*securityv1.PeerAuthentication
	AuthorizationPolicies []*securityv1.AuthorizationPolicy
	// Waypoints are the waypoint Gateways; WaypointServices and WaypointPods what istiod
	// deploys for each (one of each per Gateway, in the same order); WaypointPolicies the
	// AuthorizationPolicies attached to them by targetRefs.
	Waypoints        []*gatewayv1.Gateway
	WaypointServices []*corev1.Service
	WaypointPods     []*corev1.Pod
	WaypointPolicies []*securityv1.AuthorizationPolicy
}

// Generate builds the mesh of c.
func Generate(c Config) (*Mesh, error) {
	if err := c.Sizes.Validate(); err != nil {
		return nil, err
	}
	g := &generator{seed: c.Seed, s: c.Sizes}
	m := &Mesh{Config: c}
	m.Namespaces = append(m.Namespaces, g.rootNamespace())
	for i := range c.Sizes.Namespaces {
		m.Namespaces = append(m.Namespaces, g.namespace(i))
	}
	for n := range c.Sizes.Nodes() {
		m.Nodes = append(m.Nodes, g.node(n))
	}
	m.ConfigMaps = []*corev1.ConfigMap{g.meshConfigMap()}
	for x := range c.Sizes.Services {
		m.Services = append(m.Services, g.service(x))
	}
	for p := range c.Sizes.Pods {
		m.Pods = append(m.Pods, g.pod(p))
	}
	if c.Sizes.DestinationRules > 0 {
		m.DestinationRules = append(m.DestinationRules, g.rootDestinationRule())
		for k := range c.Sizes.DestinationRules - 1 {
			m.DestinationRules = append(m.DestinationRules, g.destinationRule(k))
		}
	}
	for k := range c.Sizes.VirtualServices {
		m.VirtualServices = append(m.VirtualServices, g.virtualService(k))
	}
	for j := range c.Sizes.PeerAuthentications {
		m.PeerAuthentications = append(m.PeerAuthentications, g.peerAuthentication(j))
	}
	for j := range c.Sizes.AuthorizationPolicies {
		m.AuthorizationPolicies = append(m.AuthorizationPolicies, g.authorizationPolicy(j))
	}
	for w := range c.Sizes.Waypoints {
		m.Waypoints = append(m.Waypoints, g.waypoint(w))
		m.WaypointServices = append(m.WaypointServices, g.waypointService(w))
		m.WaypointPods = append(m.WaypointPods, g.waypointPod(w))
	}
	for k := range c.Sizes.WaypointPolicies {
		m.WaypointPolicies = append(m.WaypointPolicies, g.waypointPolicy(k))
	}
	return m, nil
}

// generator holds the seed and sizes; each object draws from its own random stream, keyed by
// kind and index, so objects do not depend on each other or on the sizes.
type generator struct {
	seed uint64
	s    Sizes
}

func (g *generator) rng(kind string, i int) *rand.Rand {
	h := fnv.New64a()
	h.Write([]byte(kind))
	return rand.New(rand.NewPCG(g.seed, h.Sum64()^(uint64(i)*0x9e3779b97f4a7c15)))
}

// NamespaceName is the name of namespace i.
func NamespaceName(i int) string { return fmt.Sprintf("ns-%03d", i) }

// ServiceName is the name of Service x.
func ServiceName(x int) string { return fmt.Sprintf("svc-%05d", x) }

// nsOf is the namespace index of Service x; Pods, rules and policies about x live there too.
func (g *generator) nsOf(x int) int { return x % g.s.Namespaces }

// Ambient reports whether namespace i is enrolled in ambient mode; the other namespaces use
// sidecars.
func Ambient(i int) bool { return i%4 == 2 }

// fqdn is the host of Service x.
func (g *generator) fqdn(x int) string {
	return ServiceName(x) + "." + NamespaceName(g.nsOf(x)) + ".svc." + DomainSuffix
}

// serviceIn returns the m-th Service of namespace ns (wrapping around), or -1 when the
// namespace has none.
func (g *generator) serviceIn(ns, m int) int {
	if ns >= g.s.Services {
		return -1
	}
	per := (g.s.Services - 1 - ns) / g.s.Namespaces // Services of ns after the first
	return ns + g.s.Namespaces*(m%(per+1))
}

var tiers = []string{"web", "api", "db", "cache"}

// tierOf is the tier label of the Pods of Service x.
func (g *generator) tierOf(x int) string { return tiers[(x/g.s.Namespaces)%len(tiers)] }

func (g *generator) rootNamespace() *corev1.Namespace {
	return &corev1.Namespace{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
		ObjectMeta: metav1.ObjectMeta{Name: RootNamespace, Labels: map[string]string{"topology.istio.io/network": "network-1"}},
	}
}

func (g *generator) namespace(i int) *corev1.Namespace {
	l := map[string]string{"team": fmt.Sprintf("team-%02d", i%17), "env": "prod"}
	if Ambient(i) {
		l["istio.io/dataplane-mode"] = "ambient"
	} else {
		l["istio-injection"] = "enabled"
	}
	return &corev1.Namespace{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
		ObjectMeta: metav1.ObjectMeta{Name: NamespaceName(i), Labels: l},
	}
}

// NodeName is the name of Node n.
func NodeName(n int) string { return fmt.Sprintf("node-%04d", n) }

// nodeOf is the Node index of Pod p.
func nodeOf(p int) int { return p / PodsPerNode }

func nodeIP(n int) string { return fmt.Sprintf("172.18.%d.%d", n/250, 2+n%250) }

// node builds Node n, in one of three zones of one region: istiod takes a pod's locality from
// its Node's topology labels.
func (g *generator) node(n int) *corev1.Node {
	name := NodeName(n)
	return &corev1.Node{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Node"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
			"kubernetes.io/hostname":           name,
			"kubernetes.io/os":                 "linux",
			"node.kubernetes.io/instance-type": "m5.2xlarge",
			"topology.kubernetes.io/region":    "region-1",
			"topology.kubernetes.io/zone":      fmt.Sprintf("region-1-zone-%d", n%3),
		}},
		Status: corev1.NodeStatus{
			Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: nodeIP(n)}, {Type: corev1.NodeHostName, Address: name}},
		},
	}
}

func (g *generator) meshConfigMap() *corev1.ConfigMap {
	return &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: "istio", Namespace: RootNamespace, Labels: map[string]string{"istio.io/rev": "default"}},
		Data:       map[string]string{"mesh": MeshConfigYAML, "meshNetworks": "networks: {}\n"},
	}
}

// servicePorts are the ports of Service x: every Service serves HTTP on 8080; every third
// gRPC on 9090, every seventh a database port, every eleventh HTTPS.
func servicePorts(x int) []corev1.ServicePort {
	ports := []corev1.ServicePort{{Name: "http", Port: 8080, TargetPort: intstr.FromInt32(8080), Protocol: corev1.ProtocolTCP}}
	if x%3 == 0 {
		ports = append(ports, corev1.ServicePort{Name: "grpc", Port: 9090, TargetPort: intstr.FromInt32(9090), Protocol: corev1.ProtocolTCP})
	}
	if x%7 == 0 {
		ports = append(ports, corev1.ServicePort{Name: "tcp-db", Port: 5432, TargetPort: intstr.FromInt32(5432), Protocol: corev1.ProtocolTCP})
	}
	if x%11 == 0 {
		ports = append(ports, corev1.ServicePort{Name: "https", Port: 8443, TargetPort: intstr.FromString("https"), Protocol: corev1.ProtocolTCP})
	}
	return ports
}

func (g *generator) service(x int) *corev1.Service {
	name := ServiceName(x)
	ip := fmt.Sprintf("10.96.%d.%d", 1+x/250, 1+x%250)
	if x%50 == 49 {
		ip = corev1.ClusterIPNone // a headless Service now and then
	}
	labels := map[string]string{"app": name, "tier": g.tierOf(x), "app.kubernetes.io/part-of": "meshgen"}
	if g.boundToWaypoint(x) {
		labels[LabelUseWaypoint] = WaypointName
	}
	return &corev1.Service{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: NamespaceName(g.nsOf(x)),
			Labels: labels,
		},
		Spec: corev1.ServiceSpec{
			Type:       corev1.ServiceTypeClusterIP,
			ClusterIP:  ip,
			ClusterIPs: []string{ip},
			Selector:   map[string]string{"app": name},
			Ports:      servicePorts(x),
		},
	}
}

const alnum = "bcdfghjklmnpqrstvwxz2456789"

func randString(r *rand.Rand, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = alnum[r.IntN(len(alnum))]
	}
	return string(b)
}

// podName is the name of Pod p: the Pods of a Service are named like a Deployment's.
func (g *generator) podName(p int) string {
	x := p / 2
	return ServiceName(x) + "-" + g.templateHash(x) + "-" + randString(g.rng("pod", p), 5)
}

func (g *generator) templateHash(x int) string { return randString(g.rng("template", x), 10) }

// podIP is the address of Pod p, in 10.16.0.0/12.
func podIP(p int) string {
	return fmt.Sprintf("10.%d.%d.%d", 16+p>>16, (p>>8)&0xff, p&0xff)
}

const sidecarStatus = `{"initContainers":["istio-init"],"containers":["istio-proxy"],"volumes":["workload-socket","credential-socket","workload-certs","istio-envoy","istio-data","istio-podinfo","istio-token","istiod-ca-cert"],"imagePullSecrets":null,"revision":"default"}`

// pod builds Pod p: a replica of Service p/2, version v1 or v2, with a sidecar outside ambient
// namespaces, running and ready at its address.
func (g *generator) pod(p int) *corev1.Pod {
	x := p / 2
	r := g.rng("pod-spec", p)
	svc := ServiceName(x)
	nsIdx := g.nsOf(x)
	hash := g.templateHash(x)
	version := "v1"
	if p%2 == 1 {
		version = "v2"
	}
	labels := map[string]string{
		"app": svc, "version": version, "tier": g.tierOf(x), "pod-template-hash": hash,
		"service.istio.io/canonical-name": svc, "service.istio.io/canonical-revision": version,
	}
	annotations := map[string]string{"prometheus.io/scrape": "true", "prometheus.io/port": "15020"}
	var appPorts []corev1.ContainerPort
	for _, sp := range servicePorts(x) {
		appPorts = append(appPorts, corev1.ContainerPort{Name: sp.Name, ContainerPort: sp.Port, Protocol: corev1.ProtocolTCP})
	}
	containers := []corev1.Container{{
		Name:  "app",
		Image: fmt.Sprintf("registry.example.com/%s:1.%d.%d", svc, r.IntN(20), r.IntN(10)),
		Ports: appPorts,
		Env:   []corev1.EnvVar{{Name: "SERVICE_NAME", Value: svc}, {Name: "LOG_LEVEL", Value: "info"}},
		Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse(strconv.Itoa(50+10*r.IntN(20)) + "m"),
			corev1.ResourceMemory: resource.MustParse(strconv.Itoa(64+32*r.IntN(8)) + "Mi"),
		}},
	}}
	if !Ambient(nsIdx) {
		labels["security.istio.io/tlsMode"] = "istio"
		annotations["sidecar.istio.io/status"] = sidecarStatus
		annotations["kubectl.kubernetes.io/default-container"] = "app"
		containers = append(containers, corev1.Container{
			Name:  "istio-proxy",
			Image: "docker.io/istio/proxyv2:1.30.0",
			Args:  []string{"proxy", "sidecar", "--domain", "$(POD_NAMESPACE).svc.cluster.local", "--proxyLogLevel=warning", "--log_output_level=default:info"},
			Ports: []corev1.ContainerPort{{Name: "http-envoy-prom", ContainerPort: 15090, Protocol: corev1.ProtocolTCP}},
			Env:   []corev1.EnvVar{{Name: "ISTIO_META_CLUSTER_ID", Value: "Kubernetes"}, {Name: "ISTIO_META_WORKLOAD_NAME", Value: svc}},
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi"),
			}},
		})
	}
	ip := podIP(p)
	ctrl := true
	return &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{
			Name: g.podName(p), Namespace: NamespaceName(nsIdx), Labels: labels, Annotations: annotations,
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "apps/v1", Kind: "ReplicaSet", Name: svc + "-" + hash, Controller: &ctrl,
				UID: types.UID(fmt.Sprintf("00000000-0000-4000-8000-%012d", x)),
			}},
		},
		Spec: corev1.PodSpec{
			ServiceAccountName: svc,
			NodeName:           NodeName(nodeOf(p)),
			Containers:         containers,
		},
		Status: corev1.PodStatus{
			Phase:  corev1.PodRunning,
			HostIP: nodeIP(nodeOf(p)),
			PodIP:  ip,
			PodIPs: []corev1.PodIP{{IP: ip}},
			Conditions: []corev1.PodCondition{
				{Type: corev1.PodReady, Status: corev1.ConditionTrue},
				{Type: corev1.ContainersReady, Status: corev1.ConditionTrue},
				{Type: corev1.PodScheduled, Status: corev1.ConditionTrue},
			},
		},
	}
}

func dur(r *rand.Rand, minSec, maxSec int) *durationpb.Duration {
	return newDuration(int64(minSec + r.IntN(maxSec-minSec+1)))
}

func newDuration(sec int64) *durationpb.Duration { return &durationpb.Duration{Seconds: sec} }

func newUInt32(v uint32) *wrapperspb.UInt32Value { return wrapperspb.UInt32(v) }

func connectionPool(r *rand.Rand) *networking.ConnectionPoolSettings {
	return &networking.ConnectionPoolSettings{
		Tcp: &networking.ConnectionPoolSettings_TCPSettings{
			MaxConnections: int32(50 + 50*r.IntN(10)),
			ConnectTimeout: dur(r, 1, 5),
		},
		Http: &networking.ConnectionPoolSettings_HTTPSettings{
			Http1MaxPendingRequests:  int32(64 + 64*r.IntN(8)),
			MaxRequestsPerConnection: int32(r.IntN(100)),
			IdleTimeout:              dur(r, 30, 300),
		},
	}
}

func outlierDetection(r *rand.Rand) *networking.OutlierDetection {
	return &networking.OutlierDetection{
		Consecutive_5XxErrors: newUInt32(uint32(3 + r.IntN(8))),
		Interval:              dur(r, 5, 30),
		BaseEjectionTime:      dur(r, 15, 60),
		MaxEjectionPercent:    int32(10 + 10*r.IntN(5)),
	}
}

var lbPolicies = []networking.LoadBalancerSettings_SimpleLB{
	networking.LoadBalancerSettings_LEAST_REQUEST, networking.LoadBalancerSettings_ROUND_ROBIN, networking.LoadBalancerSettings_RANDOM,
}

func simpleLB(r *rand.Rand) *networking.LoadBalancerSettings {
	return &networking.LoadBalancerSettings{LbPolicy: &networking.LoadBalancerSettings_Simple{Simple: lbPolicies[r.IntN(len(lbPolicies))]}}
}

func consistentHashLB(header string) *networking.LoadBalancerSettings {
	return &networking.LoadBalancerSettings{LbPolicy: &networking.LoadBalancerSettings_ConsistentHash{
		ConsistentHash: &networking.LoadBalancerSettings_ConsistentHashLB{
			HashKey: &networking.LoadBalancerSettings_ConsistentHashLB_HttpHeaderName{HttpHeaderName: header},
		},
	}}
}

func destinationRule(name, ns string) *networkingv1.DestinationRule {
	return &networkingv1.DestinationRule{
		TypeMeta:   metav1.TypeMeta{APIVersion: "networking.istio.io/v1", Kind: "DestinationRule"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{"app.kubernetes.io/part-of": "meshgen"}},
	}
}

// rootDestinationRule is the mesh-wide rule of the root namespace: a connection pool and outlier
// detection for every host that has no rule of its own in the client or service namespace.
func (g *generator) rootDestinationRule() *networkingv1.DestinationRule {
	dr := destinationRule("mesh-default", RootNamespace)
	dr.Spec.Host = "*." + DomainSuffix
	dr.Spec.TrafficPolicy = &networking.TrafficPolicy{
		ConnectionPool: &networking.ConnectionPoolSettings{Tcp: &networking.ConnectionPoolSettings_TCPSettings{ConnectTimeout: newDuration(10)}},
		OutlierDetection: &networking.OutlierDetection{
			Consecutive_5XxErrors: newUInt32(7), Interval: newDuration(30), BaseEjectionTime: newDuration(30),
		},
	}
	return dr
}

// destinationRule builds rule k. Rules come in groups of five about two hosts, so a host can
// have several rules: for group m (k = 5m..5m+4) and host h = 10m,
//
//	5m   the service namespace's rule for h: top-level policy, portLevelSettings, subsets v1, v2
//	5m+1 the service namespace's rule for host 10m+2 by short name, exported to "*", subsets
//	     v1, v2, v3 (v3 matches no pod)
//	5m+2 a second service-namespace rule for h, merged into 5m: subset canary, and a
//	     duplicate v1 that the merge drops
//	5m+3 a rule for h in the next namespace, private to it (exportTo "."): it shadows 5m for
//	     the clients there
//	5m+4 a workloadSelector rule for h in the service namespace
func (g *generator) destinationRule(k int) *networkingv1.DestinationRule {
	r := g.rng("destinationrule", k)
	m := k / 5
	h := (10 * m) % g.s.Services
	ns := NamespaceName(g.nsOf(h))
	switch k % 5 {
	case 0:
		dr := destinationRule(ServiceName(h), ns)
		dr.Spec.Host = g.fqdn(h)
		dr.Spec.TrafficPolicy = &networking.TrafficPolicy{
			ConnectionPool:   connectionPool(r),
			OutlierDetection: outlierDetection(r),
			LoadBalancer:     simpleLB(r),
			PortLevelSettings: []*networking.TrafficPolicy_PortTrafficPolicy{{
				Port: &networking.PortSelector{Number: 8080},
				ConnectionPool: &networking.ConnectionPoolSettings{Http: &networking.ConnectionPoolSettings_HTTPSettings{
					Http2MaxRequests: int32(100 + 100*r.IntN(10)), MaxRetries: int32(1 + r.IntN(5)),
				}},
				LoadBalancer: consistentHashLB("x-user-id"),
			}},
		}
		dr.Spec.Subsets = []*networking.Subset{
			{Name: "v1", Labels: map[string]string{"version": "v1"}},
			{Name: "v2", Labels: map[string]string{"version": "v2"}, TrafficPolicy: &networking.TrafficPolicy{
				LoadBalancer: simpleLB(r),
				PortLevelSettings: []*networking.TrafficPolicy_PortTrafficPolicy{{
					Port:             &networking.PortSelector{Number: 8080},
					OutlierDetection: outlierDetection(r),
				}},
			}},
		}
		return dr
	case 1:
		h2 := (h + 2) % g.s.Services
		dr := destinationRule(ServiceName(h2), NamespaceName(g.nsOf(h2)))
		dr.Spec.Host = ServiceName(h2) // short name: resolved in the rule's namespace
		dr.Spec.ExportTo = []string{"*"}
		dr.Spec.TrafficPolicy = &networking.TrafficPolicy{
			Tls:              &networking.ClientTLSSettings{Mode: networking.ClientTLSSettings_ISTIO_MUTUAL},
			OutlierDetection: outlierDetection(r),
		}
		dr.Spec.Subsets = []*networking.Subset{
			{Name: "v1", Labels: map[string]string{"version": "v1"}},
			{Name: "v2", Labels: map[string]string{"version": "v2"}},
			{Name: "v3", Labels: map[string]string{"version": "v3"}, TrafficPolicy: &networking.TrafficPolicy{ConnectionPool: connectionPool(r)}},
		}
		return dr
	case 2:
		dr := destinationRule(ServiceName(h)+"-canary", ns)
		dr.Spec.Host = g.fqdn(h)
		dr.Spec.TrafficPolicy = &networking.TrafficPolicy{ConnectionPool: connectionPool(r)}
		dr.Spec.Subsets = []*networking.Subset{
			{Name: "canary", Labels: map[string]string{"version": "v2", "track": "canary"}},
			{Name: "v1", Labels: map[string]string{"version": "v1", "track": "stable"}},
		}
		return dr
	case 3:
		dr := destinationRule(ServiceName(h)+"-client", NamespaceName((g.nsOf(h)+1)%g.s.Namespaces))
		dr.Spec.Host = g.fqdn(h)
		dr.Spec.ExportTo = []string{"."}
		dr.Spec.TrafficPolicy = &networking.TrafficPolicy{
			OutlierDetection: outlierDetection(r),
			ConnectionPool:   &networking.ConnectionPoolSettings{Tcp: &networking.ConnectionPoolSettings_TCPSettings{MaxConnections: int32(10 + r.IntN(90))}},
		}
		dr.Spec.Subsets = []*networking.Subset{{Name: "v1", Labels: map[string]string{"version": "v1"}}}
		return dr
	default:
		dr := destinationRule(ServiceName(h)+"-selected", ns)
		dr.Spec.Host = g.fqdn(h)
		dr.Spec.WorkloadSelector = &typev1beta1.WorkloadSelector{MatchLabels: map[string]string{"app": ServiceName(h)}}
		dr.Spec.TrafficPolicy = &networking.TrafficPolicy{
			ConnectionPool: &networking.ConnectionPoolSettings{Tcp: &networking.ConnectionPoolSettings_TCPSettings{MaxConnections: 10}},
		}
		return dr
	}
}

// virtualService builds route k for host 10k: a header match to subset canary, a 90/10 split
// between v1 and v2, and a TCP route for the database port. Every third lives in another
// namespace; every seventh also routes to a subset no rule defines.
func (g *generator) virtualService(k int) *networkingv1.VirtualService {
	r := g.rng("virtualservice", k)
	h := (10 * k) % g.s.Services
	host := g.fqdn(h)
	ns := g.nsOf(h)
	name := ServiceName(h) + "-routes"
	var exportTo []string
	if k%3 == 2 {
		ns = (ns + 2) % g.s.Namespaces
		name = ServiceName(h) + "-from-" + NamespaceName(g.nsOf(h))
		exportTo = []string{"*"}
	}
	dest := func(subset string) *networking.Destination {
		return &networking.Destination{Host: host, Subset: subset, Port: &networking.PortSelector{Number: 8080}}
	}
	canary := "canary"
	if k%7 == 6 {
		canary = "v9"
	}
	vs := &networkingv1.VirtualService{
		TypeMeta:   metav1.TypeMeta{APIVersion: "networking.istio.io/v1", Kind: "VirtualService"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: NamespaceName(ns), Labels: map[string]string{"app.kubernetes.io/part-of": "meshgen"}},
	}
	vs.Spec.Hosts = []string{host}
	vs.Spec.ExportTo = exportTo
	vs.Spec.Http = []*networking.HTTPRoute{
		{
			Name:  "canary",
			Match: []*networking.HTTPMatchRequest{{Headers: map[string]*networking.StringMatch{"x-canary": {MatchType: &networking.StringMatch_Exact{Exact: "1"}}}}},
			Route: []*networking.HTTPRouteDestination{{Destination: dest(canary)}},
		},
		{
			Name: "split",
			Route: []*networking.HTTPRouteDestination{
				{Destination: dest("v1"), Weight: 90},
				{Destination: dest("v2"), Weight: 10},
			},
			Timeout: dur(r, 2, 15),
			Retries: &networking.HTTPRetry{Attempts: int32(1 + r.IntN(3)), PerTryTimeout: dur(r, 1, 2)},
		},
	}
	if h%7 == 0 {
		vs.Spec.Tcp = []*networking.TCPRoute{{
			Match: []*networking.L4MatchAttributes{{Port: 5432}},
			Route: []*networking.RouteDestination{{Destination: &networking.Destination{Host: host, Subset: "v1", Port: &networking.PortSelector{Number: 5432}}}},
		}}
	}
	return vs
}

var paModes = []security.PeerAuthentication_MutualTLS_Mode{
	security.PeerAuthentication_MutualTLS_STRICT, security.PeerAuthentication_MutualTLS_PERMISSIVE, security.PeerAuthentication_MutualTLS_UNSET,
}

// peerAuthentication builds policy j: 0 is the mesh-wide STRICT policy of the root namespace,
// 1..Namespaces the namespace-wide policies, the rest workload policies (some with port-level
// mTLS) selecting a Service's pods by app, or a tier of pods.
func (g *generator) peerAuthentication(j int) *securityv1.PeerAuthentication {
	r := g.rng("peerauthentication", j)
	pa := &securityv1.PeerAuthentication{
		TypeMeta: metav1.TypeMeta{APIVersion: "security.istio.io/v1", Kind: "PeerAuthentication"},
	}
	mtls := func(m security.PeerAuthentication_MutualTLS_Mode) *security.PeerAuthentication_MutualTLS {
		return &security.PeerAuthentication_MutualTLS{Mode: m}
	}
	switch {
	case j == 0:
		pa.ObjectMeta = metav1.ObjectMeta{Name: "default", Namespace: RootNamespace}
		pa.Spec.Mtls = mtls(security.PeerAuthentication_MutualTLS_STRICT)
	case j <= g.s.Namespaces:
		pa.ObjectMeta = metav1.ObjectMeta{Name: "default", Namespace: NamespaceName(j - 1)}
		pa.Spec.Mtls = mtls(paModes[(j-1)%len(paModes)])
	default:
		nsIdx := j % g.s.Namespaces
		pa.ObjectMeta = metav1.ObjectMeta{Name: fmt.Sprintf("pa-%05d", j), Namespace: NamespaceName(nsIdx)}
		x := g.serviceIn(nsIdx, j/g.s.Namespaces-1)
		sel := map[string]string{"tier": tiers[(j/g.s.Namespaces)%len(tiers)]}
		if x >= 0 && j%4 != 3 {
			sel = map[string]string{"app": ServiceName(x)}
		}
		pa.Spec.Selector = &typev1beta1.WorkloadSelector{MatchLabels: sel}
		pa.Spec.Mtls = mtls(paModes[r.IntN(2)])
		if j%3 == 0 {
			pa.Spec.PortLevelMtls = map[uint32]*security.PeerAuthentication_MutualTLS{
				8080: mtls(security.PeerAuthentication_MutualTLS_PERMISSIVE),
				9090: mtls(security.PeerAuthentication_MutualTLS_DISABLE),
			}
		}
	}
	pa.Labels = map[string]string{"app.kubernetes.io/part-of": "meshgen"}
	return pa
}

// authorizationPolicy builds policy j: 0 is a root-namespace DENY for a blocked range, the rest
// live in namespace j mod Namespaces and take turns being an ALLOW for one Service's pods by
// principal and port, a namespace-wide ALLOW by source namespace (with an HTTP-only rule that
// ztunnel cannot enforce), a DENY for a tier by port condition, and an ALLOW that needs request
// principals.
func (g *generator) authorizationPolicy(j int) *securityv1.AuthorizationPolicy {
	r := g.rng("authorizationpolicy", j)
	ap := &securityv1.AuthorizationPolicy{
		TypeMeta: metav1.TypeMeta{APIVersion: "security.istio.io/v1", Kind: "AuthorizationPolicy"},
	}
	ap.Labels = map[string]string{"app.kubernetes.io/part-of": "meshgen"}
	from := func(src *security.Source) []*security.Rule_From { return []*security.Rule_From{{Source: src}} }
	to := func(op *security.Operation) []*security.Rule_To { return []*security.Rule_To{{Operation: op}} }
	if j == 0 {
		ap.ObjectMeta.Name, ap.ObjectMeta.Namespace = "deny-blocked-ranges", RootNamespace
		ap.Spec.Action = security.AuthorizationPolicy_DENY
		ap.Spec.Rules = []*security.Rule{{From: from(&security.Source{IpBlocks: []string{"203.0.113.0/24", "198.51.100.0/24"}})}}
		return ap
	}
	nsIdx := j % g.s.Namespaces
	ap.ObjectMeta.Name, ap.ObjectMeta.Namespace = fmt.Sprintf("ap-%05d", j), NamespaceName(nsIdx)
	x := g.serviceIn(nsIdx, j/g.s.Namespaces)
	// The peer is one of Services 10j..10j+9, which exist whenever policy j does.
	peer := (10*j + r.IntN(10)) % g.s.Services
	principal := fmt.Sprintf("%s/ns/%s/sa/%s", DomainSuffix, NamespaceName(g.nsOf(peer)), ServiceName(peer))
	switch (j / g.s.Namespaces) % 4 {
	case 0:
		if x >= 0 {
			ap.Spec.Selector = &typev1beta1.WorkloadSelector{MatchLabels: map[string]string{"app": ServiceName(x)}}
		}
		ap.Spec.Action = security.AuthorizationPolicy_ALLOW
		ap.Spec.Rules = []*security.Rule{
			{From: from(&security.Source{Principals: []string{principal}}), To: to(&security.Operation{Ports: []string{"8080", "9090"}})},
			{From: from(&security.Source{Namespaces: []string{NamespaceName(nsIdx)}})},
		}
	case 1:
		ap.Spec.Action = security.AuthorizationPolicy_ALLOW
		ap.Spec.Rules = []*security.Rule{
			{From: from(&security.Source{Namespaces: []string{NamespaceName((nsIdx + 1) % g.s.Namespaces), NamespaceName((nsIdx + 2) % g.s.Namespaces)}}),
				To: to(&security.Operation{Ports: []string{"8080"}})},
			{To: to(&security.Operation{Methods: []string{"GET", "HEAD"}, Paths: []string{"/healthz", "/metrics"}})},
		}
	case 2:
		ap.Spec.Selector = &typev1beta1.WorkloadSelector{MatchLabels: map[string]string{"tier": tiers[j%len(tiers)]}}
		ap.Spec.Action = security.AuthorizationPolicy_DENY
		ap.Spec.Rules = []*security.Rule{{
			From: from(&security.Source{NotNamespaces: []string{NamespaceName(nsIdx), RootNamespace}}),
			When: []*security.Condition{{Key: "destination.port", Values: []string{"5432"}}},
		}}
	default:
		if x >= 0 {
			ap.Spec.Selector = &typev1beta1.WorkloadSelector{MatchLabels: map[string]string{"app": ServiceName(x), "version": "v2"}}
		}
		ap.Spec.Action = security.AuthorizationPolicy_ALLOW
		ap.Spec.Rules = []*security.Rule{{From: from(&security.Source{RequestPrincipals: []string{"https://issuer.example.com/*"}})}}
	}
	return ap
}
