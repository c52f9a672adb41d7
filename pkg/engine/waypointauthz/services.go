package waypointauthz

import (
	"fmt"
	"strconv"
	"time"

	networkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/index"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/model"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/provenance"
)

// service is a model.Service the waypoint serves: a Kubernetes Service, or one host of a
// ServiceEntry.
type service struct {
	kind string // Service or ServiceEntry
	ns   string
	// name is the object's name (what a targetRef names); attrName istiod's Attributes.Name
	// (the host, for a ServiceEntry), which orders services created at the same time.
	name, attrName string
	host           string
	created        time.Time
	ports          []port
}

type port struct {
	number int32
	name   string
	proto  index.Protocol
	// field is the port's field in the object (spec.ports[0].port).
	field string
}

func (s *service) key() model.ObjectKey {
	return model.ObjectKey{Kind: s.kind, Namespace: s.ns, Name: s.name}
}

func (s *service) ref() provenance.Ref { return s.key().Ref() }

func kubeService(s *corev1.Service) *service {
	out := &service{kind: kindService, ns: s.Namespace, name: s.Name, attrName: s.Name,
		host: s.Name + "." + s.Namespace + ".svc.cluster.local", created: s.CreationTimestamp.Time}
	for i, p := range s.Spec.Ports {
		out.ports = append(out.ports, port{number: p.Port, name: p.Name,
			proto: index.ConvertProtocol(p.Port, p.Name, p.Protocol, p.AppProtocol), field: fmt.Sprintf("spec.ports[%d].port", i)})
	}
	return out
}

// serviceEntryServices are the model.Services of a ServiceEntry, one per host
// (convertServices).
func serviceEntryServices(se *networkingv1.ServiceEntry) []*service {
	var out []*service
	for _, h := range se.Spec.GetHosts() {
		s := &service{kind: kindServiceEntry, ns: se.Namespace, name: se.Name, attrName: h, host: h, created: se.CreationTimestamp.Time}
		for i, p := range se.Spec.GetPorts() {
			s.ports = append(s.ports, port{number: int32(p.GetNumber()), name: p.GetName(), proto: index.ParseProtocol(p.GetProtocol()),
				field: "spec.ports[" + strconv.Itoa(i) + "].number"})
		}
		out = append(out, s)
	}
	return out
}

// chainKind is how a port's traffic is handled: sniffed (a TCP and an HTTP chain), HTTP or TCP.
func chainKinds(p index.Protocol) []string {
	switch p {
	case index.ProtocolUDP:
		return nil
	case index.ProtocolAuto:
		return []string{"tcp", "http"}
	case index.ProtocolHTTP, index.ProtocolHTTP2, index.ProtocolGRPC, index.ProtocolGRPCWeb, "HTTP_PROXY":
		return []string{"http"}
	}
	return []string{"tcp"}
}
