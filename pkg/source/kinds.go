package source

import (
	"context"
	"encoding/json"
	"slices"

	"google.golang.org/protobuf/proto"
	networkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	networkingv1alpha3 "istio.io/client-go/pkg/apis/networking/v1alpha3"
	securityv1 "istio.io/client-go/pkg/apis/security/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/model"
)

// The kinds Load reads, spelled as in Read.Kind and model.ObjectKey.Kind. KindNode is only ever
// read by name, never listed: the Read's Namespaces are the names of the Nodes to get (those the
// pods of interest run on), and a Read of it without names reads none.
const (
	KindNamespace           = "Namespace"
	KindService             = "Service"
	KindPod                 = "Pod"
	KindDeployment          = "Deployment"
	KindNode                = "Node"
	KindServiceEntry        = "ServiceEntry"
	KindWorkloadEntry       = "WorkloadEntry"
	KindDestinationRule     = "DestinationRule"
	KindVirtualService      = "VirtualService"
	KindSidecar             = "Sidecar"
	KindEnvoyFilter         = "EnvoyFilter"
	KindPeerAuthentication  = "PeerAuthentication"
	KindAuthorizationPolicy = "AuthorizationPolicy"
	// KindRequestAuthentication is read for sidecar pods: which workloads validate JWTs.
	KindRequestAuthentication = "RequestAuthentication"
	// KindGateway is the Gateway API Gateway, read for waypoints.
	KindGateway     = "Gateway"
	groupGateway    = "gateway.networking.k8s.io"
	kindConfigMap   = "ConfigMap"
	groupNetworking = "networking.istio.io"
	groupSecurity   = "security.istio.io"
	groupApps       = "apps"
	groupCore       = ""
)

// Kinds returns every kind Load can read, in a stable order.
func Kinds() []string {
	out := make([]string, 0, len(kindTable))
	for _, k := range kindTable {
		out = append(out, k.kind)
	}
	return out
}

// object is what every loaded Kubernetes or Istio object is.
type object interface {
	metav1.Object
	runtime.Object
}

// kindInfo describes one kind: how files spell it, how to decode it, how to list it.
type kindInfo struct {
	kind  string
	group string
	// versions are the versions accepted in files; objects are decoded into the Go type of
	// apiVersion (the first version).
	versions []string
	// resource is the plural resource name, as in `kubectl get <resource>`.
	resource string
	istio    bool
	cluster  bool
	decode   func(js []byte) (object, []fieldError)
	// fresh returns a new, empty object of an Istio kind and the parts decoders fill; decode
	// is decodeIstio on it (set in init).
	fresh func() istioParts
	// list reads one page of the kind in namespace ns ("" for all namespaces); nil for a kind
	// that is only read by name (Node).
	list func(ctx context.Context, c *clients, ns string, opts metav1.ListOptions) ([]object, string, error)
	// get reads one object of a cluster-scoped kind by name.
	get func(ctx context.Context, c *clients, name string) (object, error)
	// getIn reads one object of a namespaced kind by name; nil for a kind only listed.
	getIn func(ctx context.Context, c *clients, ns, name string) (object, error)
}

// istioParts is a new Istio object and the parts of it that decoders fill.
type istioParts struct {
	o    object
	tm   *metav1.TypeMeta
	om   *metav1.ObjectMeta
	spec istioSpec
}

// istioSpec is the spec of an Istio object: a proto message with istio.io/api's UnmarshalJSON
// (the legacy jsonpb decoder istiod's clientset uses).
type istioSpec interface {
	proto.Message
	json.Unmarshaler
}

func init() {
	for _, ki := range kindTable {
		if ki.fresh != nil && ki.decode == nil {
			fresh := ki.fresh
			ki.decode = func(js []byte) (object, []fieldError) {
				p := fresh()
				return decodeIstio(js, p.o, p.tm, p.om, p.spec)
			}
		}
	}
}

// apiVersion is the group/version of the Go type objects are decoded into.
func (k *kindInfo) apiVersion() string {
	if k.group == "" {
		return k.versions[0]
	}
	return k.group + "/" + k.versions[0]
}

// qualifiedResource is `destinationrules.networking.istio.io` (`pods` for the core group).
func (k *kindInfo) qualifiedResource() string {
	if k.group == "" {
		return k.resource
	}
	return k.resource + "." + k.group
}

var (
	networkingVersions = []string{"v1", "v1beta1", "v1alpha3"}
	securityVersions   = []string{"v1", "v1beta1"}
)

// kindTable lists the kinds in the order reads and results are reported.
var kindTable = []*kindInfo{
	{
		kind: KindNamespace, versions: []string{"v1"}, resource: "namespaces", cluster: true,
		decode: decodeKube[corev1.Namespace],
		list: func(ctx context.Context, c *clients, _ string, o metav1.ListOptions) ([]object, string, error) {
			l, err := c.kube.CoreV1().Namespaces().List(ctx, o)
			if err != nil {
				return nil, "", err
			}
			return items(l.Items), l.Continue, nil
		},
		get: func(ctx context.Context, c *clients, name string) (object, error) {
			return c.kube.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
		},
	},
	{
		kind: KindService, versions: []string{"v1"}, resource: "services",
		decode: decodeKube[corev1.Service],
		list: func(ctx context.Context, c *clients, ns string, o metav1.ListOptions) ([]object, string, error) {
			if rc := c.coreREST(); rc != nil {
				return listProtoPage(ctx, rc, "services", ns, o, newProtoItem[corev1.Service], &corev1.ServiceList{}, func(l runtime.Object) ([]object, string) {
					sl := l.(*corev1.ServiceList)
					return items(sl.Items), sl.Continue
				})
			}
			l, err := c.kube.CoreV1().Services(ns).List(ctx, o)
			if err != nil {
				return nil, "", err
			}
			return items(l.Items), l.Continue, nil
		},
		getIn: func(ctx context.Context, c *clients, ns, name string) (object, error) {
			return c.kube.CoreV1().Services(ns).Get(ctx, name, metav1.GetOptions{})
		},
	},
	{
		kind: KindPod, versions: []string{"v1"}, resource: "pods",
		decode: decodeKube[corev1.Pod],
		list: func(ctx context.Context, c *clients, ns string, o metav1.ListOptions) ([]object, string, error) {
			if rc := c.coreREST(); rc != nil {
				return listProtoPage(ctx, rc, "pods", ns, o, newPodItem, &corev1.PodList{}, func(l runtime.Object) ([]object, string) {
					pl := l.(*corev1.PodList)
					return items(pl.Items), pl.Continue
				})
			}
			l, err := c.kube.CoreV1().Pods(ns).List(ctx, o)
			if err != nil {
				return nil, "", err
			}
			return items(l.Items), l.Continue, nil
		},
		getIn: func(ctx context.Context, c *clients, ns, name string) (object, error) {
			return c.kube.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		},
	},
	{
		kind: KindDeployment, group: groupApps, versions: []string{"v1"}, resource: "deployments",
		decode: decodeKube[appsv1.Deployment],
		list: func(ctx context.Context, c *clients, ns string, o metav1.ListOptions) ([]object, string, error) {
			l, err := c.kube.AppsV1().Deployments(ns).List(ctx, o)
			if err != nil {
				return nil, "", err
			}
			return items(l.Items), l.Continue, nil
		},
	},
	{
		kind: KindNode, versions: []string{"v1"}, resource: "nodes", cluster: true,
		decode: decodeKube[corev1.Node],
		get: func(ctx context.Context, c *clients, name string) (object, error) {
			return c.kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		},
	},
	{
		kind: KindServiceEntry, group: groupNetworking, versions: networkingVersions, resource: "serviceentries", istio: true,
		fresh: func() istioParts {
			o := &networkingv1.ServiceEntry{}
			return istioParts{o, &o.TypeMeta, &o.ObjectMeta, &o.Spec}
		},
		list: func(ctx context.Context, c *clients, ns string, o metav1.ListOptions) ([]object, string, error) {
			l, err := c.istio.NetworkingV1().ServiceEntries(ns).List(ctx, o)
			if err != nil {
				return nil, "", err
			}
			return ptrItems(l.Items), l.Continue, nil
		},
	},
	{
		kind: KindWorkloadEntry, group: groupNetworking, versions: networkingVersions, resource: "workloadentries", istio: true,
		fresh: func() istioParts {
			o := &networkingv1.WorkloadEntry{}
			return istioParts{o, &o.TypeMeta, &o.ObjectMeta, &o.Spec}
		},
		list: func(ctx context.Context, c *clients, ns string, o metav1.ListOptions) ([]object, string, error) {
			l, err := c.istio.NetworkingV1().WorkloadEntries(ns).List(ctx, o)
			if err != nil {
				return nil, "", err
			}
			return ptrItems(l.Items), l.Continue, nil
		},
	},
	{
		kind: KindDestinationRule, group: groupNetworking, versions: networkingVersions, resource: "destinationrules", istio: true,
		fresh: func() istioParts {
			o := &networkingv1.DestinationRule{}
			return istioParts{o, &o.TypeMeta, &o.ObjectMeta, &o.Spec}
		},
		list: func(ctx context.Context, c *clients, ns string, o metav1.ListOptions) ([]object, string, error) {
			l, err := c.istio.NetworkingV1().DestinationRules(ns).List(ctx, o)
			if err != nil {
				return nil, "", err
			}
			return ptrItems(l.Items), l.Continue, nil
		},
	},
	{
		kind: KindVirtualService, group: groupNetworking, versions: networkingVersions, resource: "virtualservices", istio: true,
		fresh: func() istioParts {
			o := &networkingv1.VirtualService{}
			return istioParts{o, &o.TypeMeta, &o.ObjectMeta, &o.Spec}
		},
		list: func(ctx context.Context, c *clients, ns string, o metav1.ListOptions) ([]object, string, error) {
			l, err := c.istio.NetworkingV1().VirtualServices(ns).List(ctx, o)
			if err != nil {
				return nil, "", err
			}
			return ptrItems(l.Items), l.Continue, nil
		},
	},
	{
		kind: KindSidecar, group: groupNetworking, versions: networkingVersions, resource: "sidecars", istio: true,
		fresh: func() istioParts {
			o := &networkingv1.Sidecar{}
			return istioParts{o, &o.TypeMeta, &o.ObjectMeta, &o.Spec}
		},
		list: func(ctx context.Context, c *clients, ns string, o metav1.ListOptions) ([]object, string, error) {
			l, err := c.istio.NetworkingV1().Sidecars(ns).List(ctx, o)
			if err != nil {
				return nil, "", err
			}
			return ptrItems(l.Items), l.Continue, nil
		},
	},
	{
		kind: KindEnvoyFilter, group: groupNetworking, versions: []string{"v1alpha3"}, resource: "envoyfilters", istio: true,
		fresh: func() istioParts {
			o := &networkingv1alpha3.EnvoyFilter{}
			return istioParts{o, &o.TypeMeta, &o.ObjectMeta, &o.Spec}
		},
		list: func(ctx context.Context, c *clients, ns string, o metav1.ListOptions) ([]object, string, error) {
			l, err := c.istio.NetworkingV1alpha3().EnvoyFilters(ns).List(ctx, o)
			if err != nil {
				return nil, "", err
			}
			return ptrItems(l.Items), l.Continue, nil
		},
	},
	{
		kind: KindPeerAuthentication, group: groupSecurity, versions: securityVersions, resource: "peerauthentications", istio: true,
		fresh: func() istioParts {
			o := &securityv1.PeerAuthentication{}
			return istioParts{o, &o.TypeMeta, &o.ObjectMeta, &o.Spec}
		},
		list: func(ctx context.Context, c *clients, ns string, o metav1.ListOptions) ([]object, string, error) {
			l, err := c.istio.SecurityV1().PeerAuthentications(ns).List(ctx, o)
			if err != nil {
				return nil, "", err
			}
			return ptrItems(l.Items), l.Continue, nil
		},
	},
	{
		kind: KindRequestAuthentication, group: groupSecurity, versions: securityVersions, resource: "requestauthentications", istio: true,
		fresh: func() istioParts {
			o := &securityv1.RequestAuthentication{}
			return istioParts{o, &o.TypeMeta, &o.ObjectMeta, &o.Spec}
		},
		list: func(ctx context.Context, c *clients, ns string, o metav1.ListOptions) ([]object, string, error) {
			l, err := c.istio.SecurityV1().RequestAuthentications(ns).List(ctx, o)
			if err != nil {
				return nil, "", err
			}
			return ptrItems(l.Items), l.Continue, nil
		},
	},
	{
		kind: KindAuthorizationPolicy, group: groupSecurity, versions: securityVersions, resource: "authorizationpolicies", istio: true,
		fresh: func() istioParts {
			o := &securityv1.AuthorizationPolicy{}
			return istioParts{o, &o.TypeMeta, &o.ObjectMeta, &o.Spec}
		},
		list: func(ctx context.Context, c *clients, ns string, o metav1.ListOptions) ([]object, string, error) {
			l, err := c.istio.SecurityV1().AuthorizationPolicies(ns).List(ctx, o)
			if err != nil {
				return nil, "", err
			}
			return ptrItems(l.Items), l.Continue, nil
		},
	},
	{
		kind: KindGateway, group: groupGateway, versions: []string{"v1", "v1beta1"}, resource: "gateways",
		decode: decodeKube[gatewayv1.Gateway],
		list:   listGateways,
	},
}

// kindByName returns the table entry for kind, or nil.
func kindByName(kind string) *kindInfo {
	for _, k := range kindTable {
		if k.kind == kind {
			return k
		}
	}
	return nil
}

// kindByGroupKind returns the table entry for a group and kind as files spell them, or nil.
func kindByGroupKind(group, kind string) *kindInfo {
	for _, k := range kindTable {
		if k.kind == kind && k.group == group {
			return k
		}
	}
	return nil
}

func (k *kindInfo) serves(version string) bool { return slices.Contains(k.versions, version) }

// items turns a list's items into objects.
func items[T any, PT interface {
	*T
	object
}](xs []T) []object {
	out := make([]object, 0, len(xs))
	for i := range xs {
		out = append(out, PT(&xs[i]))
	}
	return out
}

func ptrItems[PT object](xs []PT) []object {
	out := make([]object, 0, len(xs))
	for _, x := range xs {
		out = append(out, x)
	}
	return out
}

// addToSnapshot appends o to the slice of snap that holds its kind.
func addToSnapshot(snap *model.Snapshot, o object) {
	switch o := o.(type) {
	case *corev1.Namespace:
		snap.Namespaces = append(snap.Namespaces, o)
	case *corev1.Service:
		snap.Services = append(snap.Services, o)
	case *corev1.Pod:
		snap.Pods = append(snap.Pods, o)
	case *appsv1.Deployment:
		snap.Deployments = append(snap.Deployments, o)
	case *corev1.Node:
		snap.Nodes = append(snap.Nodes, o)
	case *networkingv1.ServiceEntry:
		snap.ServiceEntries = append(snap.ServiceEntries, o)
	case *networkingv1.WorkloadEntry:
		snap.WorkloadEntries = append(snap.WorkloadEntries, o)
	case *networkingv1.DestinationRule:
		snap.DestinationRules = append(snap.DestinationRules, o)
	case *networkingv1.VirtualService:
		snap.VirtualServices = append(snap.VirtualServices, o)
	case *networkingv1.Sidecar:
		snap.Sidecars = append(snap.Sidecars, o)
	case *networkingv1alpha3.EnvoyFilter:
		snap.EnvoyFilters = append(snap.EnvoyFilters, o)
	case *securityv1.PeerAuthentication:
		snap.PeerAuthentications = append(snap.PeerAuthentications, o)
	case *securityv1.AuthorizationPolicy:
		snap.AuthorizationPolicies = append(snap.AuthorizationPolicies, o)
	case *securityv1.RequestAuthentication:
		snap.RequestAuthentications = append(snap.RequestAuthentications, o)
	case *gatewayv1.Gateway:
		snap.Gateways = append(snap.Gateways, o)
	}
}
