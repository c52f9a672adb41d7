// Package model is the input snapshot the engines read: typed Kubernetes and Istio objects, each
// with the place it was read from, and the effective MeshConfig.
//
// It owns: Snapshot, ObjectKey, Source, LoadIssue.
// It may import: provenance; istio.io/api and istio.io/client-go types; k8s.io/api types and
// apimachinery's meta types and label selectors.
// It must not import cli, render, source, engines, or any client.
package model

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	meshv1alpha1 "istio.io/api/mesh/v1alpha1"
	networkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	networkingv1alpha3 "istio.io/client-go/pkg/apis/networking/v1alpha3"
	securityv1 "istio.io/client-go/pkg/apis/security/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/provenance"
)

// ObjectKey identifies one object of the snapshot.
type ObjectKey struct {
	Kind      string // DestinationRule, Service, ...
	Namespace string
	Name      string
}

// Ref returns the provenance spelling of the key.
func (k ObjectKey) Ref() provenance.Ref {
	return provenance.Ref{Kind: k.Kind, Namespace: k.Namespace, Name: k.Name}
}

// Source says where one object was read from.
type Source struct {
	// Position is set for objects read from files: the line of the document's start.
	Position *provenance.Position
	// Live is true for objects read from the cluster.
	Live bool
	// ResourceVersion of a live object.
	ResourceVersion string
	// Overlay is true when a file object replaced or was added to the live state (--overlay).
	Overlay bool
}

// FieldLocator returns the file position of a field of an object, given its CRD-style path
// (`spec.trafficPolicy.portLevelSettings[port=9080].connectionPool`), or nil when unknown.
type FieldLocator interface {
	FieldPosition(key ObjectKey, path string) *provenance.Position
}

// LoadIssue is something the loader could not read, or read only in part. Issues never stop a
// load: the rest of the snapshot is still explained.
type LoadIssue struct {
	// Severity is "error" (the object was skipped or is invalid) or "warning" (a read was denied
	// or incomplete).
	Severity string
	// Resource names the object involved, when there is one.
	Resource *provenance.Ref
	// Position is where in a file, when known.
	Position *provenance.Position
	// Field is the offending field in CRD spelling, when known.
	Field string
	// Message says what is wrong, lower-case, no trailing period.
	Message string
	// Incomplete names the kinds that could not be read (for "mTLS inference is incomplete").
	Incomplete []string
}

// AffectsPod reports whether the issue matters to a workload answer in namespace ns: issues about
// no object, and issues about an object of one of kinds in ns, in root (the mesh root namespace)
// or cluster-scoped.
func (is LoadIssue) AffectsPod(kinds []string, ns, root string) bool {
	if is.Resource == nil {
		return true
	}
	if !slices.Contains(kinds, is.Resource.Kind) {
		return false
	}
	n := is.Resource.Namespace
	return n == "" || n == ns || n == root
}

// Describe is the issue as a diagnostic message: `field: message (file:line:col)`, each part
// when known (the object is named in the diagnostic's resources).
func (is LoadIssue) Describe() string {
	msg := is.Message
	if is.Field != "" {
		msg = is.Field + ": " + msg
	}
	if is.Position != nil {
		msg += " (" + is.Position.String() + ")"
	}
	return msg
}

// String spells a load issue as the command prints it: `file:line:col: Kind ns/name: field:
// message`, each part when known.
func (is LoadIssue) String() string {
	var parts []string
	if is.Position != nil {
		parts = append(parts, is.Position.String())
	}
	if is.Resource != nil {
		parts = append(parts, is.Resource.String())
	}
	if is.Field != "" {
		parts = append(parts, is.Field)
	}
	parts = append(parts, is.Message)
	return strings.Join(parts, ": ")
}

// Snapshot is everything the engines may read. Slices are sorted by namespace and name.
type Snapshot struct {
	// MeshConfig is the effective mesh config: the user's mesh config merged over istiod's
	// defaults (pkg/config/mesh DefaultMeshConfig).
	MeshConfig *meshv1alpha1.MeshConfig
	// MeshConfigSource names where MeshConfig came from (ConfigMap istio-system/istio, a file),
	// nil when only defaults apply.
	MeshConfigSource *provenance.Ref
	// MeshConfigPosition is the file position of the mesh config, when read from a file.
	MeshConfigPosition *provenance.Position
	// MeshConfigUserFields lists the top-level MeshConfig fields the user set (the rest are
	// istiod defaults), in proto JSON spelling.
	MeshConfigUserFields map[string]bool

	Namespaces            []*corev1.Namespace
	Services              []*corev1.Service
	Pods                  []*corev1.Pod
	ServiceEntries        []*networkingv1.ServiceEntry
	WorkloadEntries       []*networkingv1.WorkloadEntry
	DestinationRules      []*networkingv1.DestinationRule
	VirtualServices       []*networkingv1.VirtualService
	Sidecars              []*networkingv1.Sidecar
	EnvoyFilters          []*networkingv1alpha3.EnvoyFilter
	PeerAuthentications   []*securityv1.PeerAuthentication
	AuthorizationPolicies []*securityv1.AuthorizationPolicy
	// RequestAuthentications are read for sidecar pods (`authz`): a request principal exists
	// only where one selects the workload.
	RequestAuthentications []*securityv1.RequestAuthentication
	// Gateways are Gateway API Gateways (gateway.networking.k8s.io), read for waypoints (class
	// istio-waypoint): `authz waypoint/NAME` and the waypoints of ambient pods.
	Gateways []*gatewayv1.Gateway
	// Deployments are read so that `deployment/NAME` can be resolved to the pods its selector
	// matches.
	Deployments []*appsv1.Deployment
	// Nodes are the nodes pods run on: their topology labels are the pods' locality, as
	// istiod's Kubernetes registry reads it. Cluster-scoped; live, only the nodes of the pods
	// that matter are read.
	Nodes []*corev1.Node

	// Sources maps each object to where it was read from.
	Sources map[ObjectKey]Source
	// Fields locates fields in files; nil for live-only snapshots.
	Fields FieldLocator
	// Issues are the load problems (skipped objects, denied reads).
	Issues []LoadIssue
	// Incomplete lists kinds that could not be read at all (forbidden, missing CRD), e.g.
	// "PeerAuthentication". Engines turn these into warnings about what they could not infer.
	Incomplete map[string]string
	// IstioNamespace is the namespace istiod runs in (--istio-namespace; "" is istio-system):
	// its topology.istio.io/network label is the network of the workloads without one.
	IstioNamespace string
	// Absent are the optional kinds the cluster does not serve (their CRDs are not installed),
	// with why: none of them can exist, so an answer is whole without them. The Gateway API
	// Gateway is one: a cluster without it has no waypoint.
	Absent map[string]string
}

// MeshConfigOrigin is the origin of a MeshConfig field (`connectTimeout`, `tcpKeepalive.time`)
// in the mesh config the user wrote, and whether the user set its top-level field; when not,
// the origin names no resource, as the value is istiod's default. A nil snapshot set nothing.
func (s *Snapshot) MeshConfigOrigin(field, note string) (o provenance.Origin, userSet bool) {
	o = provenance.Origin{Layer: provenance.LayerMeshConfig, Field: field, Note: note}
	top := field
	if i := strings.IndexAny(top, ".["); i >= 0 {
		top = top[:i]
	}
	if s == nil || !s.MeshConfigUserFields[top] {
		return o, false
	}
	if s.MeshConfigSource != nil {
		r := *s.MeshConfigSource
		o.Resource = &r
	}
	o.Position = s.MeshConfigPosition
	return o, true
}

// SystemNamespace is the namespace istiod runs in: IstioNamespace, defaulting to istio-system.
func (s *Snapshot) SystemNamespace() string {
	if s.IstioNamespace != "" {
		return s.IstioNamespace
	}
	return "istio-system"
}

// RootNamespace is MeshConfig rootNamespace, defaulting to istio-system.
func (s *Snapshot) RootNamespace() string {
	if s.MeshConfig != nil && s.MeshConfig.GetRootNamespace() != "" {
		return s.MeshConfig.GetRootNamespace()
	}
	return "istio-system"
}

// Position returns the file position of an object, or nil.
func (s *Snapshot) Position(k ObjectKey) *provenance.Position {
	if src, ok := s.Sources[k]; ok {
		return src.Position
	}
	return nil
}

// FieldPosition returns the file position of a field of an object, falling back to the
// object's own position.
func (s *Snapshot) FieldPosition(k ObjectKey, path string) *provenance.Position {
	if s.Fields != nil {
		if p := s.Fields.FieldPosition(k, path); p != nil {
			return p
		}
	}
	return s.Position(k)
}

// Origin builds an Origin for a field of an object, with its file position when known.
func (s *Snapshot) Origin(layer provenance.Layer, k ObjectKey, field string) provenance.Origin {
	ref := k.Ref()
	return provenance.Origin{Layer: layer, Resource: &ref, Field: field, Position: s.FieldPosition(k, field)}
}

// Node returns the Node object with that name, or nil.
func (s *Snapshot) Node(name string) *corev1.Node {
	for _, n := range s.Nodes {
		if n.Name == name {
			return n
		}
	}
	return nil
}

// Namespace returns the Namespace object with that name, or nil.
func (s *Snapshot) Namespace(name string) *corev1.Namespace {
	for _, n := range s.Namespaces {
		if n.Name == name {
			return n
		}
	}
	return nil
}

// DeploymentPods returns the pods of namespace ns that Deployment name runs, sorted by name: the
// pods its spec.selector matches, or, when the Deployment is not in the snapshot, the pods owned
// by one of its ReplicaSets (NAME-<pod-template-hash>), as kubectl finds them. selector is the
// Deployment's selector, "" when the Deployment is not in the snapshot; err is set when its
// selector is invalid or empty.
func (s *Snapshot) DeploymentPods(ns, name string) (pods []*corev1.Pod, selector string, err error) {
	for _, d := range s.Deployments {
		if d == nil || d.Namespace != ns || d.Name != name {
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
		if err != nil {
			return nil, "", fmt.Errorf("deployment %s/%s has an invalid selector: %v", ns, name, err)
		}
		if d.Spec.Selector == nil || sel.Empty() {
			return nil, "", fmt.Errorf("deployment %s/%s has an empty selector", ns, name)
		}
		for _, p := range s.Pods {
			if p != nil && p.Namespace == ns && sel.Matches(labels.Set(p.Labels)) {
				pods = append(pods, p)
			}
		}
		return sortedByName(pods), sel.String(), nil
	}
	for _, p := range s.Pods {
		if p == nil || p.Namespace != ns {
			continue
		}
		hash := p.Labels["pod-template-hash"]
		if hash != "" && slices.ContainsFunc(p.OwnerReferences, func(o metav1.OwnerReference) bool {
			return o.Kind == "ReplicaSet" && o.Name == name+"-"+hash
		}) {
			pods = append(pods, p)
		}
	}
	return sortedByName(pods), "", nil
}

func sortedByName(pods []*corev1.Pod) []*corev1.Pod {
	slices.SortFunc(pods, func(a, b *corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	return pods
}

// Sort orders every slice by namespace, then name (deterministic output).
func (s *Snapshot) Sort() {
	sortByNsName(s.Namespaces, func(o *corev1.Namespace) (string, string) { return "", o.Name })
	sortByNsName(s.Services, func(o *corev1.Service) (string, string) { return o.Namespace, o.Name })
	sortByNsName(s.Pods, func(o *corev1.Pod) (string, string) { return o.Namespace, o.Name })
	sortByNsName(s.ServiceEntries, func(o *networkingv1.ServiceEntry) (string, string) { return o.Namespace, o.Name })
	sortByNsName(s.WorkloadEntries, func(o *networkingv1.WorkloadEntry) (string, string) { return o.Namespace, o.Name })
	sortByNsName(s.DestinationRules, func(o *networkingv1.DestinationRule) (string, string) { return o.Namespace, o.Name })
	sortByNsName(s.VirtualServices, func(o *networkingv1.VirtualService) (string, string) { return o.Namespace, o.Name })
	sortByNsName(s.Sidecars, func(o *networkingv1.Sidecar) (string, string) { return o.Namespace, o.Name })
	sortByNsName(s.EnvoyFilters, func(o *networkingv1alpha3.EnvoyFilter) (string, string) { return o.Namespace, o.Name })
	sortByNsName(s.PeerAuthentications, func(o *securityv1.PeerAuthentication) (string, string) { return o.Namespace, o.Name })
	sortByNsName(s.AuthorizationPolicies, func(o *securityv1.AuthorizationPolicy) (string, string) { return o.Namespace, o.Name })
	sortByNsName(s.RequestAuthentications, func(o *securityv1.RequestAuthentication) (string, string) { return o.Namespace, o.Name })
	sortByNsName(s.Gateways, func(o *gatewayv1.Gateway) (string, string) { return o.Namespace, o.Name })
	sortByNsName(s.Deployments, func(o *appsv1.Deployment) (string, string) { return o.Namespace, o.Name })
	sortByNsName(s.Nodes, func(o *corev1.Node) (string, string) { return "", o.Name })
}

func sortByNsName[T any](xs []T, key func(T) (string, string)) {
	sort.SliceStable(xs, func(i, j int) bool {
		ni, mi := key(xs[i])
		nj, mj := key(xs[j])
		if ni != nj {
			return ni < nj
		}
		return mi < mj
	})
}
