package webhook

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	networking "istio.io/api/networking/v1alpha3"
)

// The topology labels failoverPriority may not hold with failover (istio.io/api label package).
var topologyLabels = []string{"topology.kubernetes.io/region", "topology.kubernetes.io/zone", "topology.istio.io/subzone"}

// localityLb is agent.ValidateLocalityLbSetting (pkg/config/validation/agent/validation.go),
// without its warning (failover without outlierDetection). Istio returns early on the first
// four errors. ApplyLocalityLoadBalancer (pilot/pkg/networking/core/loadbalancer/loadbalancer.go)
// is what istiod does with the setting.
func (l *list) localityLb(at string, lb *networking.LocalityLoadBalancerSetting) {
	if lb == nil {
		return
	}
	if len(lb.GetDistribute()) > 0 && len(lb.GetFailover()) > 0 {
		l.add(at+".failover", "can not simultaneously specify 'distribute' and 'failover'", "istiod applies `distribute` and ignores `failover`")
		return
	}
	if len(lb.GetFailover()) > 0 {
		for i, p := range lb.GetFailoverPriority() {
			if slices.Contains(topologyLabels, p) {
				l.add(fmt.Sprintf("%s.failoverPriority[%d]", at, i), fmt.Sprintf("can not simultaneously set 'failover' and topology label '%s' in 'failover_priority'", p),
					"istiod applies both: the endpoints are ordered by failoverPriority's labels, then by the failover regions")
				return
			}
		}
	}
	const weightsAsWritten = "istiod copies the weights onto the endpoints of each locality as written, without checking their range or sum; Envoy shares the traffic by the ratio of the weights"
	var from []string
	for i, d := range lb.GetDistribute() {
		from = append(from, d.GetFrom())
		var total uint32
		// Istio walks `to` in Go's random map order; the first bad weight ends validation either way.
		for _, loc := range slices.Sorted(maps.Keys(d.GetTo())) {
			w := d.GetTo()[loc]
			if w == 0 || w > 100 {
				l.add(fmt.Sprintf("%s.distribute[%d].to[%s]", at, i, loc), "locality weight must be in range [1, 100]", weightsAsWritten)
				return
			}
			total += w
		}
		if total != 100 {
			l.add(fmt.Sprintf("%s.distribute[%d].to", at, i), fmt.Sprintf("total locality weight %v != 100", total), weightsAsWritten)
			return
		}
		if msg := localities(slices.Sorted(maps.Keys(d.GetTo()))); msg != "" {
			l.add(fmt.Sprintf("%s.distribute[%d].to", at, i), msg, localitiesAsWritten)
		}
	}
	if msg := localities(from); msg != "" {
		l.add(at+".distribute", msg, localitiesAsWritten)
	}
	for i, f := range lb.GetFailover() {
		fa := fmt.Sprintf("%s.failover[%d]", at, i)
		if f.GetFrom() == f.GetTo() {
			l.add(fa, "locality lb failover settings must specify different regions", "istiod keeps the entry: it maps the region to itself, which changes no priority")
		}
		if strings.Contains(f.GetFrom(), "/") || strings.Contains(f.GetTo(), "/") {
			l.add(fa, "locality lb failover only specify region", failoverRegionAsWritten)
		}
		if strings.Contains(f.GetFrom(), "*") || strings.Contains(f.GetTo(), "*") {
			l.add(fa, "locality lb failover region should not contain '*' wildcard", failoverRegionAsWritten)
		}
	}
}

// localitiesAsWritten is what istiod does with localities the webhook rejects:
// applyLocalityWeights matches them against the proxy's and the endpoints' localities as
// written (util.LocalityMatch), the first matching `from` entry winning, and walks `to` in Go's
// map order, an endpoint group taking the weight of the first entry that matches it.
const localitiesAsWritten = "istiod matches the localities as written, prefix by prefix; for the proxy the first matching `from` entry wins, and an endpoint group takes the weight of one `to` entry that matches it (istiod walks `to` in Go's random map order, so with overlapping entries which one can change from push to push)"

// failoverRegionAsWritten is what istiod does with a failover region the webhook rejects:
// applyLocalityFailover compares it with the endpoints' region as a whole string.
const failoverRegionAsWritten = "istiod compares the value with the endpoints' region as a whole string, so an entry holding a zone or a `*` matches no region"

// zoneAwareAsWritten is what istiod does with a zoneAwareLbSetting value the webhook rejects.
const zoneAwareAsWritten = "istiod does not check it and applies the setting as written"

// zoneAwareLb is agent.ValidateZoneAwareLbSetting, without its warning.
func (l *list) zoneAwareLb(at string, lb *networking.ZoneAwareLoadBalancerSetting) {
	if lb == nil {
		return
	}
	for i, p := range lb.GetFailoverPriority() {
		if slices.Contains(topologyLabels, p) {
			l.add(fmt.Sprintf("%s.failoverPriority[%d]", at, i),
				fmt.Sprintf("'failover_priority' for zone aware lb must not use topology label '%s'; region- and zone-level routing are handled automatically", p), zoneAwareAsWritten)
		}
	}
	for i, f := range lb.GetFailover() {
		fa := fmt.Sprintf("%s.failover[%d]", at, i)
		if f.GetFrom() == f.GetTo() {
			l.add(fa, "zone aware lb failover settings must specify different regions", zoneAwareAsWritten)
		}
		if strings.Contains(f.GetFrom(), "/") || strings.Contains(f.GetTo(), "/") {
			l.add(fa, "zone aware lb failover only specifies region; zone and subzone failover are handled automatically", zoneAwareAsWritten)
		}
		if strings.Contains(f.GetFrom(), "*") || strings.Contains(f.GetTo(), "*") {
			l.add(fa, "zone aware lb failover region should not contain '*' wildcard", zoneAwareAsWritten)
		}
	}
}

// localities is agent.validateLocalities: its first error, or "".
func localities(locs []string) string {
	// region -> zone -> subzone; "*" marks a level covered whole.
	seen := map[string]map[string]map[string]bool{}
	for _, loc := range locs {
		if n := strings.Count(loc, "*"); n > 0 && (n > 1 || !strings.HasSuffix(loc, "*")) {
			return fmt.Sprintf("locality %s wildcard '*' number can not exceed 1 and must be in the end", loc)
		}
		overlap := fmt.Sprintf("locality %s overlap with previous specified ones", loc)
		if _, ok := seen["*"]; ok {
			return overlap
		}
		items := strings.SplitN(loc, "/", 3)
		if slices.Contains(items, "") {
			return fmt.Sprintf("locality %s must not contain empty region/zone/subzone info", loc)
		}
		region := items[0]
		switch len(items) {
		case 1:
			if _, ok := seen[region]; ok {
				return overlap
			}
			seen[region] = map[string]map[string]bool{"*": {"*": true}}
		case 2:
			zone := items[1]
			if r, ok := seen[region]; ok {
				if _, ok := r["*"]; ok {
					return overlap
				}
				if _, ok := r[zone]; ok {
					return overlap
				}
				r[zone] = map[string]bool{"*": true}
			} else {
				seen[region] = map[string]map[string]bool{zone: {"*": true}}
			}
		case 3:
			zone, sub := items[1], items[2]
			if r, ok := seen[region]; ok {
				if _, ok := r["*"]; ok {
					return overlap
				}
				if z, ok := r[zone]; ok {
					if z["*"] || z[sub] {
						return overlap
					}
					z[sub] = true
				} else {
					r[zone] = map[string]bool{sub: true}
				}
			} else {
				seen[region] = map[string]map[string]bool{zone: {sub: true}}
			}
		}
	}
	return ""
}
