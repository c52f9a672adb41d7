package waypointauthz

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/explain"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/model"
)

// PodSectionTitle is the title of the section an ambient pod's answer gets for the waypoints of
// its services.
const PodSectionTitle = "Waypoints of the pod's services"

// PodSection is the waypoint's answer for the services of an ambient pod: for each Service of
// the pod's namespace that selects it and uses a waypoint, the waypoint's chains for the
// service and their authorization filters (`authz waypoint/NAME` has every origin). Nil when
// no service of the pod uses a waypoint.
func PodSection(snap *model.Snapshot, pod *corev1.Pod) *explain.Section {
	s := explain.Section{Title: PodSectionTitle, Columns: []string{"SERVICE", "WAYPOINT", "CHAIN", "AUTHORIZATION"}}
	cache := map[string]*explanation{}
	for _, svc := range snap.Services {
		if svc.Namespace != pod.Namespace || len(svc.Spec.Selector) == 0 || !labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(pod.Labels)) {
			continue
		}
		wns, wname, isNone, ok := objectWaypoint(snap, svc.Labels, svc.Namespace)
		if !ok || isNone {
			continue
		}
		name := "Service " + svc.Name
		wp := "waypoint/" + wname + " -n " + wns
		gw, err := Find(snap, Query{Namespace: wns, Name: wname})
		if err != nil {
			s.Rows = append(s.Rows, []string{name, wp, "-", "not bound: " + err.Error()})
			continue
		}
		e := cache[wns+"/"+wname]
		if e == nil {
			e = newExplanation(snap, gw)
			cache[wns+"/"+wname] = e
		}
		var b *Binding
		for i := range e.bind {
			if x := &e.bind[i]; x.Kind == kindService && x.Namespace == svc.Namespace && x.Name == svc.Name {
				b = x
			}
		}
		if b == nil || !b.Bound {
			why := "not bound"
			if b != nil && b.Reason != "" {
				why += ": " + b.Reason
			}
			s.Rows = append(s.Rows, []string{name, wp, "-", why})
			continue
		}
		if !e.wp.deployed {
			wp += " (not yet deployed: as once programmed)"
		}
		for _, c := range e.chains {
			if c.svc == nil || c.svc.kind != kindService || c.svc.ns != svc.Namespace || c.svc.name != svc.Name {
				continue
			}
			var fs []string
			for _, f := range c.filters() {
				a := f.Action
				if f.Provider != "" {
					a += " " + f.Provider
				}
				fs = append(fs, strings.TrimPrefix(f.Name, "envoy.filters.")+" ("+a+")")
			}
			auth := "none: no policy is attached"
			if len(fs) > 0 {
				auth = strings.Join(fs, ", ")
			}
			s.Rows = append(s.Rows, []string{name, wp, c.name, auth})
		}
	}
	if len(s.Rows) == 0 {
		return nil
	}
	s.Rows = append(s.Rows, []string{"", "", "", "every origin: kubectl mesh-explain authz waypoint/NAME -n NAMESPACE"})
	return &s
}
