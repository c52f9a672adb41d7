package check

import (
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/explain"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/model"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/provenance"
)

// IgnoreAnnotation silences findings on purpose: its value is a comma-separated list of
// diagnostic IDs (`D19,A07`). On an object a finding names, or on the Service, ServiceEntry or
// Pod an answer is about, it silences those findings.
const IgnoreAnnotation = "mesh-explain.io/ignore"

// ignorer says why a diagnostic is silenced.
type ignorer struct {
	snap  *model.Snapshot
	flag  map[string]bool
	annos map[provenance.Ref][]string
}

func newIgnorer(snap *model.Snapshot, ids []string) *ignorer {
	ig := &ignorer{snap: snap, flag: map[string]bool{}, annos: map[provenance.Ref][]string{}}
	for _, id := range ids {
		ig.flag[strings.ToUpper(strings.TrimSpace(id))] = true
	}
	add := func(kind string, m metav1.Object) {
		v, ok := m.GetAnnotations()[IgnoreAnnotation]
		if !ok {
			return
		}
		ig.annos[provenance.Ref{Kind: kind, Namespace: m.GetNamespace(), Name: m.GetName()}] = ParseIDs(v)
	}
	for _, o := range snap.Namespaces {
		add("Namespace", o)
	}
	for _, o := range snap.Services {
		add("Service", o)
	}
	for _, o := range snap.Pods {
		add("Pod", o)
	}
	for _, o := range snap.ServiceEntries {
		add("ServiceEntry", o)
	}
	for _, o := range snap.WorkloadEntries {
		add("WorkloadEntry", o)
	}
	for _, o := range snap.DestinationRules {
		add("DestinationRule", o)
	}
	for _, o := range snap.VirtualServices {
		add("VirtualService", o)
	}
	for _, o := range snap.Sidecars {
		add("Sidecar", o)
	}
	for _, o := range snap.EnvoyFilters {
		add("EnvoyFilter", o)
	}
	for _, o := range snap.Gateways {
		add("Gateway", o)
	}
	for _, o := range snap.PeerAuthentications {
		add("PeerAuthentication", o)
	}
	for _, o := range snap.AuthorizationPolicies {
		add("AuthorizationPolicy", o)
	}
	return ig
}

// ParseIDs splits a list of diagnostic IDs: `D19, a07` is D19 and A07.
func ParseIDs(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.ToUpper(strings.TrimSpace(p)); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// reason is why d, in the answer about subject, is silenced, or "".
func (ig *ignorer) reason(d *explain.Diagnostic, subject *provenance.Ref) string {
	if len(ig.flag) == 0 && len(ig.annos) == 0 {
		return ""
	}
	if ig.flag[d.ID] {
		return "--ignore " + d.ID
	}
	refs := d.Resources
	if subject != nil {
		refs = append(slices.Clip(refs), *subject)
	}
	for _, r := range refs {
		if slices.Contains(ig.annos[r], d.ID) {
			where := ""
			if p := ig.snap.FieldPosition(model.ObjectKey{Kind: r.Kind, Namespace: r.Namespace, Name: r.Name}, "metadata.annotations["+IgnoreAnnotation+"]"); p != nil {
				where = " (" + p.String() + ")"
			}
			return fmt.Sprintf("annotation %s: %s on %s%s", IgnoreAnnotation, d.ID, r, where)
		}
	}
	return ""
}
