package meshgen

import (
	"fmt"
	"time"

	security "istio.io/api/security/v1beta1"
	typev1beta1 "istio.io/api/type/v1beta1"
	securityv1 "istio.io/client-go/pkg/apis/security/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// Waypoint names and labels, as istiod and `istioctl waypoint apply` spell them
// (pilot/pkg/config/kube/gatewaycommon testdata/deployment/waypoint-*.yaml).
const (
	// WaypointName is the name of every waypoint Gateway (one per namespace), its Service and
	// the prefix of its pod.
	WaypointName = "waypoint"
	// WaypointClass is the GatewayClass of waypoints.
	WaypointClass = "istio-waypoint"
	// LabelUseWaypoint binds a Service to a waypoint of its namespace.
	LabelUseWaypoint = "istio.io/use-waypoint"

	labelGatewayName      = "gateway.networking.k8s.io/gateway-name"
	labelGatewayClassName = "gateway.networking.k8s.io/gateway-class-name"
	labelManaged          = "gateway.istio.io/managed"
	managedMesh           = "istio.io-mesh-controller"
)

// programmedAt is the lastTransitionTime of the waypoints' status conditions: a fixed time, so
// that the files and the cluster hold the same objects.
var programmedAt = metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))

// waypointNamespace is the namespace index of waypoint w: the w-th ambient namespace.
func waypointNamespace(w int) int { return 4*w + 2 }

// waypointOf is the waypoint of namespace ns, or -1 when it has none.
func (g *generator) waypointOf(ns int) int {
	if !Ambient(ns) || (ns-2)/4 >= g.s.Waypoints {
		return -1
	}
	return (ns - 2) / 4
}

// boundToWaypoint reports whether Service x binds to its namespace's waypoint: every other
// Service of a namespace with a waypoint, the second, fourth, ... by index (so Service 2, the
// authz pod's, is not: its answer stays the ztunnel one alone).
func (g *generator) boundToWaypoint(x int) bool {
	return g.waypointOf(g.nsOf(x)) >= 0 && (x/g.s.Namespaces)%2 == 1
}

// boundService is the j-th Service of namespace ns that binds to its waypoint.
func (g *generator) boundService(ns, j int) int { return ns + g.s.Namespaces*(2*j+1) }

func waypointIP(w int) string { return fmt.Sprintf("10.96.255.%d", 1+w) }

// waypointPodIP is the address of the pod of waypoint w, in 10.15.0.0/16, outside the Pods'
// 10.16.0.0/12.
func waypointPodIP(w int) string { return fmt.Sprintf("10.15.%d.%d", w/250, 1+w%250) }

func waypointLabels() map[string]string {
	return map[string]string{
		labelManaged:          managedMesh,
		labelGatewayClassName: WaypointClass,
		labelGatewayName:      WaypointName,
	}
}

// waypoint builds the Gateway of waypoint w, in the w-th ambient namespace: for service traffic,
// its HBONE listener, and programmed (status.addresses holds its Service's cluster IP), as
// istiod leaves it once it has deployed the waypoint.
func (g *generator) waypoint(w int) *gatewayv1.Gateway {
	cond := func(t, reason, msg string) metav1.Condition {
		return metav1.Condition{Type: t, Status: metav1.ConditionTrue, Reason: reason, Message: msg, ObservedGeneration: 1, LastTransitionTime: programmedAt}
	}
	ipType := gatewayv1.IPAddressType
	return &gatewayv1.Gateway{
		TypeMeta: metav1.TypeMeta{APIVersion: "gateway.networking.k8s.io/v1", Kind: "Gateway"},
		ObjectMeta: metav1.ObjectMeta{
			Name: WaypointName, Namespace: NamespaceName(waypointNamespace(w)),
			Labels: map[string]string{"istio.io/waypoint-for": "service", "app.kubernetes.io/part-of": "meshgen"},
		},
		Spec: gatewayv1.GatewaySpec{
			GatewayClassName: WaypointClass,
			Listeners:        []gatewayv1.Listener{{Name: "mesh", Port: 15008, Protocol: "HBONE"}},
		},
		Status: gatewayv1.GatewayStatus{
			Addresses: []gatewayv1.GatewayStatusAddress{{Type: &ipType, Value: waypointIP(w)}},
			Conditions: []metav1.Condition{
				cond(string(gatewayv1.GatewayConditionAccepted), string(gatewayv1.GatewayReasonAccepted), "Resource accepted"),
				cond(string(gatewayv1.GatewayConditionProgrammed), string(gatewayv1.GatewayReasonProgrammed), "Resource programmed, assigned to service(s) "+
					WaypointName+"."+NamespaceName(waypointNamespace(w))+".svc."+DomainSuffix+":15008"),
			},
		},
	}
}

// waypointService builds the Service istiod deploys for waypoint w.
func (g *generator) waypointService(w int) *corev1.Service {
	ip := waypointIP(w)
	tcp, all := "tcp", "all"
	return &corev1.Service{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: metav1.ObjectMeta{
			Name: WaypointName, Namespace: NamespaceName(waypointNamespace(w)), Labels: waypointLabels(),
			Annotations: map[string]string{"networking.istio.io/traffic-distribution": "PreferClose"},
		},
		Spec: corev1.ServiceSpec{
			Type:       corev1.ServiceTypeClusterIP,
			ClusterIP:  ip,
			ClusterIPs: []string{ip},
			Selector:   map[string]string{labelGatewayName: WaypointName},
			Ports: []corev1.ServicePort{
				{Name: "status-port", Port: 15021, TargetPort: intstr.FromInt32(15021), Protocol: corev1.ProtocolTCP, AppProtocol: &tcp},
				{Name: "mesh", Port: 15008, TargetPort: intstr.FromInt32(15008), Protocol: corev1.ProtocolTCP, AppProtocol: &all},
			},
		},
	}
}

// waypointPod builds the pod of waypoint w (one replica), on the first Node.
func (g *generator) waypointPod(w int) *corev1.Pod {
	r := g.rng("waypoint-pod", w)
	hash := randString(r, 10)
	labels := waypointLabels()
	labels["istio.io/dataplane-mode"] = "none"
	labels["service.istio.io/canonical-name"] = WaypointName
	labels["service.istio.io/canonical-revision"] = "latest"
	labels["sidecar.istio.io/inject"] = "false"
	labels["pod-template-hash"] = hash
	ip := waypointPodIP(w)
	ctrl := true
	return &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{
			Name: WaypointName + "-" + hash + "-" + randString(r, 5), Namespace: NamespaceName(waypointNamespace(w)), Labels: labels,
			Annotations: map[string]string{"istio.io/rev": "default", "prometheus.io/port": "15020", "prometheus.io/scrape": "true"},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "apps/v1", Kind: "ReplicaSet", Name: WaypointName + "-" + hash, Controller: &ctrl,
				UID: types.UID(fmt.Sprintf("00000000-0000-4000-9000-%012d", w)),
			}},
		},
		Spec: corev1.PodSpec{
			ServiceAccountName: WaypointName,
			NodeName:           NodeName(0),
			Containers: []corev1.Container{{
				Name:  "istio-proxy",
				Image: "docker.io/istio/proxyv2:1.30.0",
				Args:  []string{"proxy", "waypoint", "--domain", "$(POD_NAMESPACE).svc.cluster.local", "--serviceCluster", WaypointName + ".$(POD_NAMESPACE)"},
				Ports: []corev1.ContainerPort{
					{Name: "status-port", ContainerPort: 15021, Protocol: corev1.ProtocolTCP},
					{Name: "mesh", ContainerPort: 15008, Protocol: corev1.ProtocolTCP},
				},
			}},
		},
		Status: corev1.PodStatus{
			Phase:  corev1.PodRunning,
			HostIP: nodeIP(0),
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

// waypointPolicy builds policy k, attached to waypoint k mod Waypoints (in its namespace) by
// targetRefs. With m = k / Waypoints, the policies of a waypoint take turns being
//
//	m%4 == 0  an ALLOW of the Gateway itself: GET and HEAD on /api/* from the namespace and the
//	          next one, and port 8080 from one Service's principal
//	m%4 == 1  an ALLOW of bound Service m-1: GET and POST on /v1/* from one principal
//	m%4 == 2  a DENY of bound Services m-1 and m: /admin/* from outside the namespace
//	m%4 == 3  an ALLOW of bound Service m-1: port 8080 when the x-tenant header names the team
//
// Bound Service j is the namespace's j-th Service that binds to the waypoint; every one
// a policy names exists whenever the policy does (k < Services/10).
func (g *generator) waypointPolicy(k int) *securityv1.AuthorizationPolicy {
	r := g.rng("waypointpolicy", k)
	w := k % g.s.Waypoints
	m := k / g.s.Waypoints
	nsIdx := waypointNamespace(w)
	ns := NamespaceName(nsIdx)
	ap := &securityv1.AuthorizationPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: "security.istio.io/v1", Kind: "AuthorizationPolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("wp-%05d", k), Namespace: ns, Labels: map[string]string{"app.kubernetes.io/part-of": "meshgen"}},
	}
	gatewayRef := &typev1beta1.PolicyTargetReference{Group: "gateway.networking.k8s.io", Kind: "Gateway", Name: WaypointName}
	serviceRef := func(j int) *typev1beta1.PolicyTargetReference {
		return &typev1beta1.PolicyTargetReference{Kind: "Service", Name: ServiceName(g.boundService(nsIdx, j))}
	}
	peer := (10*k + r.IntN(10)) % g.s.Services
	principal := fmt.Sprintf("%s/ns/%s/sa/%s", DomainSuffix, NamespaceName(g.nsOf(peer)), ServiceName(peer))
	from := func(src *security.Source) []*security.Rule_From { return []*security.Rule_From{{Source: src}} }
	to := func(op *security.Operation) []*security.Rule_To { return []*security.Rule_To{{Operation: op}} }
	switch m % 4 {
	case 0:
		ap.Spec.TargetRefs = []*typev1beta1.PolicyTargetReference{gatewayRef}
		ap.Spec.Action = security.AuthorizationPolicy_ALLOW
		ap.Spec.Rules = []*security.Rule{
			{From: from(&security.Source{Namespaces: []string{ns, NamespaceName((nsIdx + 1) % g.s.Namespaces)}}),
				To: to(&security.Operation{Methods: []string{"GET", "HEAD"}, Paths: []string{"/api/*"}})},
			{From: from(&security.Source{Principals: []string{principal}}), To: to(&security.Operation{Ports: []string{"8080"}})},
		}
	case 1:
		ap.Spec.TargetRefs = []*typev1beta1.PolicyTargetReference{serviceRef(m - 1)}
		ap.Spec.Action = security.AuthorizationPolicy_ALLOW
		ap.Spec.Rules = []*security.Rule{{
			From: from(&security.Source{Principals: []string{principal}}),
			To:   to(&security.Operation{Methods: []string{"GET", "POST"}, Paths: []string{"/v1/*"}}),
		}}
	case 2:
		ap.Spec.TargetRefs = []*typev1beta1.PolicyTargetReference{serviceRef(m - 1), serviceRef(m)}
		ap.Spec.Action = security.AuthorizationPolicy_DENY
		ap.Spec.Rules = []*security.Rule{{
			From: from(&security.Source{NotNamespaces: []string{ns}}),
			To:   to(&security.Operation{Paths: []string{"/admin/*"}}),
		}}
	default:
		ap.Spec.TargetRefs = []*typev1beta1.PolicyTargetReference{serviceRef(m - 1)}
		ap.Spec.Action = security.AuthorizationPolicy_ALLOW
		ap.Spec.Rules = []*security.Rule{{
			To:   to(&security.Operation{Ports: []string{"8080"}}),
			When: []*security.Condition{{Key: "request.headers[x-tenant]", Values: []string{fmt.Sprintf("team-%02d", nsIdx%17)}}},
		}}
	}
	return ap
}
