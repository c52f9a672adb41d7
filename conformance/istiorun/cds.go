package istiorun

import (
	"bytes"
	"encoding/json"
	"fmt"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"time"

	cluster "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	networkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	corev1 "k8s.io/api/core/v1"

	"istio.io/istio/pilot/pkg/model"
	v3 "istio.io/istio/pilot/pkg/xds/v3"
	"istio.io/istio/pilot/test/xds"
	istiocluster "istio.io/istio/pkg/cluster"
	"istio.io/istio/pkg/config/constants"
	pm "istio.io/istio/pkg/model"
	"istio.io/istio/pkg/test"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/meshhost"
	mxmodel "github.com/mesh-explain/kubectl-mesh-explain/pkg/model"
)

// ProxyIstioVersion is the ISTIO_VERSION the client proxy reports.
const ProxyIstioVersion = "1.30.0"

// DefaultProxyIP is the address of the label-less sidecar used for `--from namespace/NS` and
// when no --from is given.
const DefaultProxyIP = "10.255.255.1"

// ResolveHost turns the host typed on the command line into a hostname, as the CLI does: of the
// host as typed and its Kubernetes expansion (meshhost.Candidates), the first that names a
// Service or ServiceEntry host wins, else the most specific wildcard ServiceEntry host covering
// it, else the last candidate.
func (sc *Scenario) ResolveHost(typed, ns string) string {
	h := strings.TrimSuffix(strings.ToLower(strings.TrimSpace(typed)), ".")
	cands := meshhost.Candidates(h, ns)
	known := sc.Hostnames()
	for _, c := range cands {
		if known[c] {
			return c
		}
	}
	if !strings.HasPrefix(h, "*") {
		best := ""
		for k := range known {
			if strings.HasPrefix(k, "*") && strings.HasSuffix(h, k[1:]) && (best == "" || len(k) > len(best) || (len(k) == len(best) && k < best)) {
				best = k
			}
		}
		if best != "" {
			return best
		}
	}
	return cands[len(cands)-1]
}

// Hostnames returns the hostnames the scenario defines: Services and ServiceEntry hosts.
func (sc *Scenario) Hostnames() map[string]bool {
	out := map[string]bool{}
	for _, o := range sc.Kube {
		switch t := o.(type) {
		case *corev1.Service:
			out[t.Name+"."+t.Namespace+".svc."+DomainSuffix] = true
		case *networkingv1.ServiceEntry:
			for _, h := range t.Spec.GetHosts() {
				out[strings.ToLower(h)] = true
			}
		}
	}
	return out
}

// Pod returns the pod ns/name of the scenario, or nil.
func (sc *Scenario) Pod(ns, name string) *corev1.Pod {
	for _, o := range sc.Kube {
		if p, ok := o.(*corev1.Pod); ok && p.Namespace == ns && p.Name == name {
			return p
		}
	}
	return nil
}

// ClientProxy describes the sidecar whose clusters are computed.
type ClientProxy struct {
	ID       string
	Metadata model.NodeMetadata
}

// BuildClientProxy makes the node a sidecar-injected pod would present to istiod: the node ID
// `sidecar~IP~POD.NS~NS.svc.cluster.local` and the metadata the injector and the agent set.
func (sc *Scenario) BuildClientProxy() (*ClientProxy, error) {
	a := sc.Args
	ns := a.Namespace
	kind, name, _ := strings.Cut(a.From, "/")
	switch {
	case a.From == "":
	case kind == "namespace":
		ns = name
	case kind == "pod":
		pod := sc.Pod(ns, name)
		if pod == nil {
			return nil, fmt.Errorf("--from %s: no pod %s/%s", a.From, ns, name)
		}
		if pod.Status.PodIP == "" {
			return nil, fmt.Errorf("--from %s: %w", a.From, &NoProxyError{Pod: pod.Namespace + "/" + pod.Name, Missing: "status.podIP"})
		}
		return sc.PodProxy(pod), nil
	default:
		return nil, fmt.Errorf("--from %q: want pod/NAME or namespace/NS", a.From)
	}
	return &ClientProxy{
		ID: fmt.Sprintf("sidecar~%s~mesh-explain.%s~%s.svc.%s", DefaultProxyIP, ns, ns, DomainSuffix),
		Metadata: model.NodeMetadata{
			IstioVersion:     ProxyIstioVersion,
			InstanceIPs:      []string{DefaultProxyIP},
			Namespace:        ns,
			InterceptionMode: model.InterceptionRedirect,
			MeshID:           sc.Mesh.GetTrustDomain(),
			ClusterID:        istiocluster.ID(constants.DefaultClusterName),
		},
	}, nil
}

// PodProxy is the node the proxy of a pod presents to istiod: the node ID
// `sidecar~IP~POD.NS~NS.svc.cluster.local` (`router~...` for a gateway's pod) and the metadata the injector and the agent set
// (labels, annotations, addresses, service account, container ports). The pod must have a
// status.podIP.
func (sc *Scenario) PodProxy(pod *corev1.Pod) *ClientProxy {
	var ips []string
	for _, ip := range pod.Status.PodIPs {
		ips = append(ips, ip.IP)
	}
	if len(ips) == 0 {
		ips = []string{pod.Status.PodIP}
	}
	var podPorts pm.PodPortList
	for _, c := range pod.Spec.Containers {
		for _, p := range c.Ports {
			podPorts = append(podPorts, pm.PodPort{Name: p.Name, ContainerPort: int(p.ContainerPort), Protocol: string(p.Protocol)})
		}
	}
	// A gateway's istio-proxy runs as a router: its node ID says so (model.ProxyType reads the
	// pod as istiod reads the node).
	nodeType := "sidecar"
	if typ, _ := mxmodel.ProxyType(pod); typ == mxmodel.ProxyRouter {
		nodeType = "router"
	}
	return &ClientProxy{
		ID: fmt.Sprintf("%s~%s~%s.%s~%s.svc.%s", nodeType, pod.Status.PodIP, pod.Name, pod.Namespace, pod.Namespace, DomainSuffix),
		Metadata: model.NodeMetadata{
			IstioVersion:     ProxyIstioVersion,
			Labels:           pod.Labels,
			Annotations:      pod.Annotations,
			InstanceIPs:      ips,
			Namespace:        pod.Namespace,
			NodeName:         pod.Spec.NodeName,
			WorkloadName:     workloadName(pod),
			InterceptionMode: model.InterceptionRedirect,
			ServiceAccount:   pod.Spec.ServiceAccountName,
			MeshID:           sc.Mesh.GetTrustDomain(),
			ClusterID:        istiocluster.ID(constants.DefaultClusterName),
			PodPorts:         podPorts,
		},
	}
}

// workloadName is the injector's workload name: the owning controller's name, with the
// ReplicaSet hash removed, or the pod name for a bare pod.
func workloadName(pod *corev1.Pod) string {
	for _, o := range pod.OwnerReferences {
		if o.Controller == nil || !*o.Controller {
			continue
		}
		if o.Kind == "ReplicaSet" {
			if h := pod.Labels["pod-template-hash"]; h != "" && strings.HasSuffix(o.Name, "-"+h) {
				return strings.TrimSuffix(o.Name, "-"+h)
			}
		}
		return o.Name
	}
	return pod.Name
}

// CDS runs istiod in process on the scenario, connects the client proxy over ADS, and returns
// the host's outbound clusters (narrowed by --port and --subset) sorted by name.
func CDS(sc *Scenario) ([]*cluster.Cluster, error) {
	ConfigureLogging()
	if sc.Args.Verb != "cluster" {
		return nil, fmt.Errorf("not a cluster scenario: %q", sc.Command)
	}
	proxy, err := sc.BuildClientProxy()
	if err != nil {
		return nil, err
	}
	host := sc.ResolveHost(sc.Args.Target, sc.Args.Namespace)
	resources, err := sc.Push(proxy, v3.ClusterType, "clusters")
	if err != nil {
		return nil, err
	}
	var all []*cluster.Cluster
	for _, r := range resources {
		c := &cluster.Cluster{}
		if err := r.UnmarshalTo(c); err != nil {
			return nil, err
		}
		all = append(all, c)
	}
	var out []*cluster.Cluster
	for _, c := range all {
		if HostCluster(c.Name, host, sc.Args.Port, sc.Args.Subset) {
			out = append(out, c)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// PanicError reports that istiod's own code panicked on the scenario (a real istiod would
// crash the same way when the proxy asks for its clusters).
type PanicError struct {
	// What names what istiod was generating ("clusters", "listeners").
	What  string
	Value any
	Stack string
}

func (e *PanicError) Error() string {
	what := e.What
	if what == "" {
		what = "clusters"
	}
	return fmt.Sprintf("istiod panicked while generating %s: %v", what, e.Value)
}

// panicGuard wraps a generator and turns its panics into a report.
type panicGuard struct {
	model.XdsResourceGenerator
	what   string
	panics chan *PanicError
}

func (p *panicGuard) Generate(proxy *model.Proxy, w *model.WatchedResource, req *model.PushRequest) (res model.Resources, logs model.XdsLogDetails, err error) {
	defer func() {
		if r := recover(); r != nil {
			select {
			case p.panics <- &PanicError{What: p.what, Value: r, Stack: string(debug.Stack())}:
			default:
			}
			res, err = nil, fmt.Errorf("panic: %v", r)
		}
	}()
	return p.XdsResourceGenerator.Generate(proxy, w, req)
}

// HostCluster says whether a cluster name is `outbound|PORT|SUBSET|host` for the host, port
// (0: any) and subset ("": any, including the default cluster).
func HostCluster(name, host string, port uint32, subset string) bool {
	parts := strings.Split(name, "|")
	if len(parts) != 4 || parts[0] != string(model.TrafficDirectionOutbound) || parts[3] != host {
		return false
	}
	if port != 0 && parts[1] != strconv.FormatUint(uint64(port), 10) {
		return false
	}
	if subset != "" && parts[2] != subset {
		return false
	}
	return true
}

// EnvoyJSON writes clusters the way `-o envoy` does: a JSON array of protojson objects,
// indented by two spaces, with a final newline.
func EnvoyJSON(clusters []*cluster.Cluster) ([]byte, error) {
	return protoArrayJSON(clusters, func(c *cluster.Cluster) string { return "cluster " + c.Name })
}

// protoArrayJSON is `-o envoy`'s shape: a JSON array of the messages' protojson, indented by two
// spaces, with a final newline; what names a message in an error.
func protoArrayJSON[M proto.Message](msgs []M, what func(M) string) ([]byte, error) {
	var raw bytes.Buffer
	raw.WriteByte('[')
	for i, m := range msgs {
		if i > 0 {
			raw.WriteByte(',')
		}
		b, err := protojson.Marshal(m)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", what(m), err)
		}
		raw.Write(b)
	}
	raw.WriteByte(']')
	var out bytes.Buffer
	if err := json.Indent(&out, raw.Bytes(), "", "  "); err != nil {
		return nil, err
	}
	out.WriteByte('\n')
	return out.Bytes(), nil
}

// RunCDS loads and runs a cluster scenario and returns Istio's `-o envoy` output.
func RunCDS(sc *Scenario) ([]byte, error) {
	cs, err := CDS(sc)
	if err != nil {
		return nil, err
	}
	return EnvoyJSON(cs)
}

// Push runs istiod in process on the scenario, connects proxy over ADS, requests typeURL and
// returns the resources of the first response. istiod's generators run in the ADS stream's
// goroutine, where a panic would end the process: Push catches it there and returns it as a
// *PanicError (what names the resources in its message).
func (sc *Scenario) Push(proxy *ClientProxy, typeURL, what string) ([]*anypb.Any, error) {
	var resources []*anypb.Any
	var panicked *PanicError
	err := test.Wrap(func(t test.Failer) {
		s := xds.NewFakeDiscoveryServer(t, xds.FakeOptions{
			KubernetesObjects: sc.Kube,
			Configs:           sc.Configs,
			MeshConfig:        sc.Mesh,
		})
		guard := &panicGuard{XdsResourceGenerator: s.Discovery.Generators[typeURL], what: what, panics: make(chan *PanicError, 1)}
		s.Discovery.Generators[typeURL] = guard
		ads := s.ConnectADS().WithID(proxy.ID).WithMetadata(proxy.Metadata).WithTimeout(30 * time.Second)
		ads.Request(t, &discovery.DiscoveryRequest{TypeUrl: typeURL})
		var resp *discovery.DiscoveryResponse
		if err := test.Wrap(func(t test.Failer) { resp = ads.ExpectResponse(t) }); err != nil {
			select {
			case p := <-guard.panics:
				panicked = p
				t.Fatal(p)
			default:
				t.Fatal(err)
			}
		}
		resources = resp.Resources
	})
	if panicked != nil {
		return nil, panicked
	}
	return resources, err
}
