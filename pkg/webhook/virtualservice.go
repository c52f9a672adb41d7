package webhook

import (
	"fmt"
	"maps"
	"net/netip"
	"regexp"
	"slices"
	"strings"

	networking "istio.io/api/networking/v1alpha3"
)

// vsAsWritten is what istiod does with most VirtualService values the webhook rejects.
const vsAsWritten = "istiod does not check it and builds the routes from the VirtualService as written (the answer's rows say what it reads)"

// VirtualService returns what ValidateVirtualService rejects, after the metadata checks:
// delegate rules, gateway names, hosts (form, `*` for the mesh, duplicates), JWT claim routing
// outside gateways, the presence of routes, each HTTP route (validateHTTPRoute: its kind, match
// requests, header manipulations, CORS, fault injection, mirrors, redirect, direct response,
// retries, rewrite, destinations and weights, timeout), TLS routes (validateTLSRoute), TCP
// routes (validateTCPRoute), and exportTo. Its warnings (unreachable rules, ineffective
// matches) are not reported.
func VirtualService(m Meta, spec *networking.VirtualService) []Problem {
	if ps := checkMetadata(m, false, ""); ps != nil {
		return ps
	}
	var l list
	delegate := len(spec.GetHosts()) == 0
	if delegate {
		if len(spec.GetGateways()) != 0 {
			l.add("spec.gateways", "delegate virtual service must have no gateways specified", vsAsWritten)
		}
		if len(spec.GetTls()) != 0 {
			l.add("spec.tls", "delegate virtual service must have no tls route specified", vsAsWritten)
		}
		if len(spec.GetTcp()) != 0 {
			l.add("spec.tcp", "delegate virtual service must have no tcp route specified", vsAsWritten)
		}
	}
	gatewaySemantics := m.Annotations["internal.istio.io/route-semantics"] == "gateway"
	appliesToMesh, appliesToGateway := true, false
	if len(spec.GetGateways()) > 0 {
		l.gatewayNames("spec.gateways", spec.GetGateways(), gatewaySemantics)
		appliesToGateway = !slices.Contains(spec.GetGateways(), "mesh")
		appliesToMesh = !appliesToGateway
	}
	if !appliesToGateway {
		for i, h := range spec.GetHttp() {
			for j, mt := range h.GetMatch() {
				for _, hs := range []struct {
					field string
					m     map[string]*networking.StringMatch
				}{{"headers", mt.GetHeaders()}, {"withoutHeaders", mt.GetWithoutHeaders()}} {
					// Istio walks the maps in Go's random order; the errors come here by key.
					for _, k := range slices.Sorted(maps.Keys(hs.m)) {
						if jwtClaimRoute(k) {
							l.add(fmt.Sprintf("spec.http[%d].match[%d].%s[%s]", i, j, hs.field, k),
								fmt.Sprintf("JWT claim based routing (key: %s) is only supported for gateway, found no gateways: %v", k, spec.GetGateways()),
								// translateMetadataMatch (pilot/pkg/networking/core/route/route.go) reads the key for any route.
								"istiod does not check it and builds the claim match into the route as it does for a gateway; Istio supports claim routing only on gateways")
						}
					}
				}
			}
		}
	}
	allValid := true
	sni := false
	for _, t := range spec.GetTls() {
		for _, mt := range t.GetMatch() {
			if len(mt.GetSniHosts()) > 0 {
				sni = true
			}
		}
	}
	for i, h := range spec.GetHosts() {
		at := fmt.Sprintf("spec.hosts[%d]", i)
		msg := ""
		if appliesToGateway {
			msg = gatewayDomain(sni, h)
		} else {
			msg = wildcardDomain(h)
		}
		if msg != "" {
			if _, err := netip.ParseAddr(h); err != nil {
				l.add(at, msg, "istiod does not check it and adds the host as written to the route configuration's domains: it matches only requests whose Host header is exactly that")
				allValid = false
			}
		} else if appliesToMesh && h == "*" {
			l.add(at, "wildcard host * is not allowed for virtual services bound to the mesh gateway", vsAsWritten)
			allValid = false
		}
	}
	if allValid {
		hs := spec.GetHosts()
		for i := range hs {
			for j := i + 1; j < len(hs); j++ {
				if hostMatches(hs[i], hs[j]) {
					l.add(fmt.Sprintf("spec.hosts[%d]", j), fmt.Sprintf("duplicate hosts in virtual service: %s & %s", hs[i], hs[j]), vsAsWritten)
				}
			}
		}
	}
	if len(spec.GetHttp()) == 0 && len(spec.GetTcp()) == 0 && len(spec.GetTls()) == 0 {
		l.add("spec.http", "http, tcp or tls must be provided in virtual service", "istiod builds no route from the VirtualService")
	}
	for i, h := range spec.GetHttp() {
		at := fmt.Sprintf("spec.http[%d]", i)
		if h == nil {
			l.add(at, "http route may not be null", vsAsWritten)
			continue
		}
		l.httpRoute(at, h, delegate, gatewaySemantics)
	}
	for i, t := range spec.GetTls() {
		l.tlsRoute(fmt.Sprintf("spec.tls[%d]", i), t, spec, gatewaySemantics)
	}
	for i, t := range spec.GetTcp() {
		at := fmt.Sprintf("spec.tcp[%d]", i)
		if t == nil {
			continue
		}
		for j, mt := range t.GetMatch() {
			ma := fmt.Sprintf("%s.match[%d]", at, j)
			if mt == nil {
				l.add(ma, "tcp match may not be nil", vsAsWritten)
				continue
			}
			l.l4Match(ma, mt.GetDestinationSubnets(), mt.Port, mt.GetSourceLabels(), mt.GetGateways())
		}
		if len(t.GetRoute()) == 0 {
			l.add(at+".route", "TCP route is required", "istiod builds no TCP route from the entry")
		}
		l.routeDestinations(at+".route", t.GetRoute(), gatewaySemantics)
	}
	for _, p := range exportToErrors(m.Namespace, spec.GetExportTo(), false, false) {
		field := "spec.exportTo"
		if p.at >= 0 {
			field = fmt.Sprintf("spec.exportTo[%d]", p.at)
		}
		l.add(field, p.msg, exportToIstiod(p.msg, "VirtualService"))
	}
	return l
}

// jwtClaimRoute is jwt.ToRoutingClaim(key).Match: `@request.auth.claims.NAME` or
// `@request.auth.claims[NAME]`.
func jwtClaimRoute(key string) bool {
	const prefix = "@request.auth.claims"
	if !strings.HasPrefix(strings.ToLower(key), prefix) {
		return false
	}
	name := key[len(prefix):]
	return (strings.HasPrefix(name, ".") && len(name) > 1) || (strings.HasPrefix(name, "[") && strings.HasSuffix(name, "]") && len(name) > 2)
}

// gatewayDomain is agent.ValidateWildcardDomainForVirtualServiceBoundToGateway: with SNI
// routes, an `outbound_.PORT_._.HOST` name is allowed.
func gatewayDomain(sni bool, domain string) string {
	if msg := dnsPreconditions(domain); msg != "" {
		return msg
	}
	if sni && strings.HasPrefix(domain, "outbound_") {
		parts := strings.Split(domain, "_")
		if len(parts) < 4 {
			return fmt.Sprintf("domain name %s invalid, should follow 'outbound_.<PORT>_._.<HOSTNAME>' format", domain)
		}
		port, hostname := strings.Trim(parts[1], "."), strings.Trim(parts[3], ".")
		if parts[0] != "outbound" {
			return fmt.Sprintf("domain name %q invalid (label %q invalid)", domain, parts[0])
		}
		if !regexp.MustCompile("([0-9].*)").MatchString(port) {
			return fmt.Sprintf("domain name %q invalid (label %q invalid). should follow outbound_.<PORT>_._.<HOSTNAME> format", domain, port)
		}
		if !regexp.MustCompile("([a-zA-Z].*)").MatchString(hostname) {
			return fmt.Sprintf("domain name %q invalid (label %q invalid). should follow outbound_.<PORT>_._.<HOSTNAME> format", domain, hostname)
		}
		return ""
	}
	return wildcardDomain(domain)
}

// hostMatches is host.Name.Matches (pkg/config/host/name.go): equal names, or a wildcard that
// covers the other.
func hostMatches(n, o string) bool {
	nw, ow := strings.HasPrefix(n, "*"), strings.HasPrefix(o, "*")
	switch {
	case nw && ow:
		if len(n) < len(o) {
			return strings.HasSuffix(o[1:], n[1:])
		}
		return strings.HasSuffix(n[1:], o[1:])
	case nw:
		return strings.HasSuffix(o, n[1:])
	case ow:
		return strings.HasSuffix(n, o[1:])
	}
	return n == o
}

// ipSubnet is agent.ValidateIPSubnet.
func ipSubnet(s string) string {
	if strings.Count(s, "/") == 1 {
		if _, err := netip.ParsePrefix(s); err != nil {
			return s + " is not a valid CIDR block"
		}
		return ""
	}
	if _, err := netip.ParseAddr(s); err != nil {
		return s + " is not a valid IP"
	}
	return ""
}

// gatewayNames is validateGatewayNames: `namespace/name` with DNS-1123 labels, or an FQDN (the
// legacy form). A name without `/` ends the check of the list, as in Istio.
func (l *list) gatewayNames(field string, names []string, gatewaySemantics bool) {
	for i, g := range names {
		at := fmt.Sprintf("%s[%d]", field, i)
		ns, name, ok := strings.Cut(g, "/")
		if !ok {
			if msg := fqdn(g); msg != "" {
				l.add(at, msg, gatewayNameIstiod)
			}
			return
		}
		if ns == "" || name == "" {
			l.add(at, "config namespace and gateway name cannot be empty", gatewayNameIstiod)
		}
		if !isDNS1123Label(ns) {
			l.add(at, fmt.Sprintf("invalid value for namespace: %q", ns), gatewayNameIstiod)
		}
		if !isDNS1123Label(name) && !gatewaySemantics {
			l.add(at, fmt.Sprintf("invalid value for gateway name: %q", name), gatewayNameIstiod)
		}
	}
}

// gatewayNameIstiod is what istiod does with a gateway name the webhook rejects.
const gatewayNameIstiod = "istiod compares the name as written with the gateways it knows: no Gateway has such a name, so the VirtualService binds to none through it"

// httpRoute is validateHTTPRoute (pkg/config/validation/virtualservice.go):
// validateHTTPRouteConflict, validateHTTPRouteMatchRequest, the rest in routeExtras, the mirror
// checks, validateHTTPRouteDestinations and the timeout.
func (l *list) httpRoute(at string, h *networking.HTTPRoute, delegate, gatewaySemantics bool) {
	switch {
	case !delegate && h.Delegate != nil:
		if h.Redirect != nil {
			l.add(at+".redirect", fmt.Sprintf("root HTTP route %s must not specify redirect", h.Name), vsAsWritten)
		}
		if h.Route != nil {
			l.add(at+".route", fmt.Sprintf("root HTTP route %s must not specify route", h.Name), vsAsWritten)
		}
	default:
		if delegate && h.Delegate != nil {
			l.add(at+".delegate", "delegate HTTP route cannot contain delegate", vsAsWritten)
		}
		switch {
		case h.Redirect != nil:
			if len(h.Route) > 0 {
				l.add(at+".redirect", "HTTP route cannot contain both route and redirect", vsAsWritten)
			}
			if h.Fault != nil {
				l.add(at+".redirect", "HTTP route cannot contain both fault and redirect", vsAsWritten)
			}
			if h.Rewrite != nil {
				l.add(at+".redirect", "HTTP route rule cannot contain both rewrite and redirect", vsAsWritten)
			}
			if h.DirectResponse != nil {
				l.add(at+".redirect", "HTTP route rule cannot contain both direct_response and redirect", vsAsWritten)
			}
		case h.DirectResponse != nil:
			if len(h.Route) > 0 {
				l.add(at+".directResponse", "HTTP route cannot contain both route and direct_response", vsAsWritten)
			}
			if h.Fault != nil {
				l.add(at+".directResponse", "HTTP route cannot contain both fault and direct_response", vsAsWritten)
			}
			if h.Rewrite != nil {
				l.add(at+".directResponse", "HTTP route rule cannot contain both rewrite and direct_response", vsAsWritten)
			}
		case len(h.Route) == 0:
			l.add(at+".route", "HTTP route, redirect or direct_response is required", vsAsWritten)
		}
		if h.Mirror != nil && len(h.Mirrors) > 0 {
			l.add(at+".mirrors", "HTTP route cannot contain both mirror and mirrors", vsAsWritten)
		}
	}
	l.httpMatches(at, h.GetMatch())
	l.routeExtras(at, h)
	//nolint:staticcheck // mirrorPercent is deprecated, and still validated.
	if h.MirrorPercent != nil && h.MirrorPercent.GetValue() > 100 {
		l.add(at+".mirrorPercent", fmt.Sprintf("mirror_percent must have a max value of 100 (it has %d)", h.MirrorPercent.GetValue()), vsAsWritten) //nolint:staticcheck // see above
	}
	if p := h.MirrorPercentage; p != nil {
		if p.GetValue() > 100 {
			l.add(at+".mirrorPercentage", fmt.Sprintf("mirror_percentage must have a max value of 100 (it has %f)", p.GetValue()), vsAsWritten)
		}
		if p.GetValue() < 0 {
			l.add(at+".mirrorPercentage", fmt.Sprintf("mirror_percentage must have a min value of 0 (it has %f)", p.GetValue()), vsAsWritten)
		}
	}
	l.destination(at+".mirror", h.Mirror)
	l.httpRouteDestinations(at+".route", h.GetRoute(), gatewaySemantics)
	if h.Timeout != nil {
		l.checkDuration(at+".timeout", h.Timeout, vsAsWritten)
	}
}

// httpRouteDestinations is validateHTTPRouteDestinations.
func (l *list) httpRouteDestinations(at string, ds []*networking.HTTPRouteDestination, gatewaySemantics bool) {
	var total int32
	// route.go's weighted clusters; a single destination is sent without its weight.
	negative := func(w int32) string {
		if len(ds) == 1 {
			return "istiod sends a single destination without its weight"
		}
		return negativeWeight(w)
	}
	for i, d := range ds {
		da := fmt.Sprintf("%s[%d]", at, i)
		if d == nil {
			l.add(da, "weight may not be nil", vsAsWritten)
			continue
		}
		if d.Destination == nil {
			l.add(da+".destination", "destination is required", vsAsWritten)
		}
		l.headers(da+".headers", d.GetHeaders())
		if !gatewaySemantics {
			l.destination(da+".destination", d.Destination)
		}
		if d.Weight < 0 {
			l.add(da+".weight", fmt.Sprintf("weight %d < 0", d.Weight), negative(d.Weight))
		}
		total += d.Weight
	}
	if len(ds) > 1 && total == 0 {
		istiod := "istiod writes the weighted clusters with the weights as written, a negative one converted to an unsigned number"
		if !slices.ContainsFunc(ds, func(d *networking.HTTPRouteDestination) bool { return d.GetWeight() != 0 }) {
			istiod = zeroWeights
		}
		l.add(at, "total destination weight = 0", istiod)
	}
}

// routeDestinations is validateRouteDestinations (TCP and TLS routes).
func (l *list) routeDestinations(at string, ds []*networking.RouteDestination, gatewaySemantics bool) {
	var total int32
	for i, d := range ds {
		da := fmt.Sprintf("%s[%d]", at, i)
		if d == nil {
			l.add(da, "weight may not be nil", vsAsWritten)
			continue
		}
		if d.Destination == nil {
			l.add(da+".destination", "destination is required", vsAsWritten)
		}
		if !gatewaySemantics {
			l.destination(da+".destination", d.Destination)
		}
		if d.Weight < 0 {
			l.add(da+".weight", fmt.Sprintf("weight %d < 0", d.Weight), vsAsWritten)
		}
		total += d.Weight
	}
	if len(ds) > 1 && total == 0 {
		l.add(at, "total destination weight = 0", vsAsWritten)
	}
}

// negativeWeight is what istiod does with a negative HTTP weight: processWeightedDestination
// (pilot/pkg/networking/core/route/route.go) converts it to an unsigned number.
func negativeWeight(w int32) string {
	return fmt.Sprintf("istiod converts it to an unsigned number: the weighted cluster gets weight %d", uint32(w))
}

// zeroWeights is what istiod does with HTTP weights that are all 0: the route builder skips
// every destination of weight 0, so the weighted clusters are empty, which Envoy's
// WeightedCluster (clusters: min_items 1) rejects.
const zeroWeights = "istiod skips every destination of weight 0 and writes no weighted cluster; Envoy rejects a route without one, so the proxy NACKs the route configuration"

// destination is validateDestination: a host (not `*`), a subset name, a port.
func (l *list) destination(at string, d *networking.Destination) {
	if d == nil {
		return
	}
	if d.Host == "*" {
		l.add(at+".host", "invalid destination host *", vsAsWritten)
	} else if msg := wildcardDomain(d.Host); msg != "" {
		l.add(at+".host", msg, "istiod does not check it and routes to the cluster of the host as written, which exists only if a service has exactly that name")
	}
	if d.Subset != "" && !isDNS1123Label(d.Subset) {
		l.add(at+".subset", "subset name is invalid: "+d.Subset, "istiod routes to the subset's cluster by the name as written (outbound|PORT|NAME|HOST), which exists only if a DestinationRule defines that subset")
	}
	if d.Port != nil {
		if msg := portNumber(int(d.Port.GetNumber())); msg != "" {
			l.add(at+".port.number", msg, vsAsWritten)
		}
	}
}

// headerNameRegexp is validation.go's validHeaderNameRegex (RFC 7230 tchars).
var headerNameRegexp = regexp.MustCompile("^[" + "!#$%&'*+-.^_`|~" + "A-Z" + "a-z" + "0-9" + "]+$")

// headerNameOrJwtClaim is ValidateHTTPHeaderNameOrJwtClaimRoute.
func headerNameOrJwtClaim(name string) string {
	switch {
	case name == "":
		return "header name cannot be empty"
	case jwtClaimRoute(name):
		return ""
	case name == ":method" || name == ":scheme" || name == ":authority" || name == ":path" || name == ":status":
		return ""
	case !headerNameRegexp.MatchString(name):
		return fmt.Sprintf("header name %s is not a valid header name", name)
	}
	return ""
}

// stringMatch is validateStringMatch: a prefix must not be empty, a regex must compile (RE2,
// at most 1024 characters).
func stringMatch(sm *networking.StringMatch, where string) string {
	switch sm.GetMatchType().(type) {
	case *networking.StringMatch_Prefix:
		if sm.GetPrefix() == "" {
			return fmt.Sprintf("%q: prefix string match should not be empty", where)
		}
	case *networking.StringMatch_Regex:
		return stringRegexp(sm, where)
	}
	return ""
}

// stringRegexp is validateStringMatchRegexp.
func stringRegexp(sm *networking.StringMatch, where string) string {
	if _, ok := sm.GetMatchType().(*networking.StringMatch_Regex); !ok {
		return ""
	}
	re := sm.GetRegex()
	if re == "" {
		return fmt.Sprintf("%q: regex string match should not be empty", where)
	}
	if len(re) > 1024 {
		return fmt.Sprintf("%q: regex is too large, max length allowed is 1024", where)
	}
	if _, err := regexp.Compile(re); err != nil {
		return fmt.Sprintf("%q: %s; Istio uses RE2 style regex-based match (https://github.com/google/re2/wiki/Syntax)", where, err)
	}
	return ""
}

// matchAsWritten is what istiod does with a match condition the webhook rejects.
const matchAsWritten = "istiod does not check it and copies the match into the route as written; Envoy rejects a route whose match it cannot compile, so the proxy NACKs the route configuration"

// httpMatches is validateHTTPRouteMatchRequest: header names and string matches, then ports,
// source labels, gateways and source namespaces. Istio walks the header maps in Go's random
// order; the errors come here by name.
func (l *list) httpMatches(at string, ms []*networking.HTTPMatchRequest) {
	for i, m := range ms {
		if m == nil {
			continue
		}
		ma := fmt.Sprintf("%s.match[%d]", at, i)
		for _, name := range slices.Sorted(maps.Keys(m.GetHeaders())) {
			h := m.GetHeaders()[name]
			f := fmt.Sprintf("%s.headers[%s]", ma, name)
			if h == nil {
				l.add(f, fmt.Sprintf("header match %v cannot be null", name), matchAsWritten)
			}
			if msg := headerNameOrJwtClaim(name); msg != "" {
				l.add(f, msg, matchAsWritten)
			}
			if msg := stringMatch(h, "headers"); msg != "" {
				l.add(f, msg, matchAsWritten)
			}
		}
		for _, name := range slices.Sorted(maps.Keys(m.GetWithoutHeaders())) {
			h := m.GetWithoutHeaders()[name]
			f := fmt.Sprintf("%s.withoutHeaders[%s]", ma, name)
			if msg := headerNameOrJwtClaim(name); msg != "" {
				l.add(f, msg, matchAsWritten)
			}
			if h != nil && h.GetRegex() != "*" {
				if msg := stringMatch(h, "withoutHeaders"); msg != "" {
					l.add(f, msg, matchAsWritten)
				}
			}
		}
		if msg := stringRegexp(m.GetUri(), "uri"); msg != "" {
			l.add(ma+".uri", msg, matchAsWritten)
		}
		for _, sm := range []struct {
			field string
			m     *networking.StringMatch
		}{{"scheme", m.GetScheme()}, {"method", m.GetMethod()}, {"authority", m.GetAuthority()}} {
			if msg := stringMatch(sm.m, sm.field); msg != "" {
				l.add(ma+"."+sm.field, msg, matchAsWritten)
			}
		}
		for _, name := range slices.Sorted(maps.Keys(m.GetQueryParams())) {
			if msg := stringMatch(m.GetQueryParams()[name], "queryParams"); msg != "" {
				l.add(fmt.Sprintf("%s.queryParams[%s]", ma, name), msg, matchAsWritten)
			}
		}
	}
	for i, m := range ms {
		if m == nil {
			continue
		}
		ma := fmt.Sprintf("%s.match[%d]", at, i)
		if m.Port != 0 {
			if msg := portNumber(int(m.Port)); msg != "" {
				l.add(ma+".port", msg, "istiod compares the port as written with the listener's port, which it never equals, so the match never applies")
			}
		}
		for _, msg := range labelErrors(m.GetSourceLabels()) {
			l.add(ma+".sourceLabels", msg, selectorMatchesNothing)
		}
		l.gatewayNames(ma+".gateways", m.GetGateways(), false)
		if m.SourceNamespace != "" && !isDNS1123Label(m.SourceNamespace) {
			l.add(ma+".sourceNamespace", fmt.Sprintf("sourceNamespace match %s is invalid", m.SourceNamespace),
				"istiod compares the value with the client's namespace, which no namespace name equals, so the match never applies")
		}
	}
}

// tlsRoute is validateTLSRoute: at least one match, each with SNI hosts that are domains (or
// IPs, only a warning) within the VirtualService's hosts, destination subnets, port, source
// labels and gateways; at least one destination.
func (l *list) tlsRoute(at string, t *networking.TLSRoute, vs *networking.VirtualService, gatewaySemantics bool) {
	// validateSniHost's isGateway: true unless the gateways list "mesh", even when it is empty.
	gateway := !slices.Contains(vs.GetGateways(), "mesh")
	if t == nil {
		return
	}
	if len(t.GetMatch()) == 0 {
		l.add(at+".match", "TLS route must have at least one match condition", vsAsWritten)
	}
	for i, m := range t.GetMatch() {
		ma := fmt.Sprintf("%s.match[%d]", at, i)
		if m == nil {
			l.add(ma, "TLS match may not be null", vsAsWritten)
			continue
		}
		if len(m.GetSniHosts()) == 0 {
			l.add(ma+".sniHosts", "TLS match must have at least one SNI host", vsAsWritten)
		}
		for j, sni := range m.GetSniHosts() {
			f := fmt.Sprintf("%s.sniHosts[%d]", ma, j)
			msg := ""
			if gateway {
				msg = gatewayDomain(true, sni)
			} else {
				msg = wildcardDomain(sni)
			}
			if msg != "" {
				if _, err := netip.ParseAddr(sni); err != nil {
					l.add(f, msg, vsAsWritten)
				}
				continue
			}
			if !slices.ContainsFunc(vs.GetHosts(), func(h string) bool { return hostSubsetOf(sni, h) }) {
				l.add(f, fmt.Sprintf("SNI host %q is not a compatible subset of any of the virtual service hosts: [%s]", sni, strings.Join(vs.GetHosts(), ", ")), vsAsWritten)
			}
		}
		l.l4Match(ma, m.GetDestinationSubnets(), m.Port, m.GetSourceLabels(), m.GetGateways())
	}
	if len(t.GetRoute()) == 0 {
		l.add(at+".route", "TLS route is required", "istiod builds no TLS route from the entry")
	}
	l.routeDestinations(at+".route", t.GetRoute(), gatewaySemantics)
}

// hostSubsetOf is host.Name.SubsetOf: n is o, or within the wildcard o.
func hostSubsetOf(n, o string) bool {
	nw, ow := strings.HasPrefix(n, "*"), strings.HasPrefix(o, "*")
	switch {
	case nw && ow:
		return len(n) >= len(o) && strings.HasSuffix(n[1:], o[1:])
	case nw:
		return false
	case ow:
		return strings.HasSuffix(n, o[1:])
	}
	return n == o
}

// l4Match checks the fields a TCP match and a TLS match share (validateTCPMatch and
// validateTLSMatch): destination subnets, port, source labels and gateways; ma is the match.
func (l *list) l4Match(ma string, subnets []string, port uint32, sourceLabels map[string]string, gateways []string) {
	for k, s := range subnets {
		if msg := ipSubnet(s); msg != "" {
			l.add(fmt.Sprintf("%s.destinationSubnets[%d]", ma, k), msg, vsAsWritten)
		}
	}
	if port != 0 {
		if msg := portNumber(int(port)); msg != "" {
			l.add(ma+".port", msg, vsAsWritten)
		}
	}
	for _, msg := range labelErrors(sourceLabels) {
		l.add(ma+".sourceLabels", msg, selectorMatchesNothing)
	}
	l.gatewayNames(ma+".gateways", gateways, false)
}
