package webhook

import (
	"fmt"
	"maps"
	"net/netip"
	"path"
	"slices"
	"strings"

	networking "istio.io/api/networking/v1alpha3"
)

// seAsWritten is what istiod does with most ServiceEntry values the webhook rejects:
// serviceentry.convertServices and convertServiceEntryToInstances
// (pilot/pkg/serviceregistry/serviceentry/conversion.go) do not check them.
const seAsWritten = "istiod does not check it and builds the service and its endpoints from the ServiceEntry as written (the answer's rows say what it reads)"

// protocolOf is protocol.Parse (pkg/config/protocol/instance.go): the lower-cased name, ""
// for an unknown one. Istio compares "DoubleHBONE" with a lower-cased string, so it never
// matches.
func protocolOf(s string) string {
	switch p := strings.ToLower(s); p {
	case "tcp", "udp", "grpc", "grpc-web", "http", "http_proxy", "http2", "https", "tls", "mongo", "redis", "mysql":
		return p
	}
	return ""
}

func protocolIsHTTP(p string) bool {
	return p == "http" || p == "http2" || p == "http_proxy" || p == "grpc" || p == "grpc-web"
}

func protocolIsTLS(p string) bool { return p == "https" || p == "tls" }

// portNumber is agent.ValidatePort.
func portNumber(p int) string {
	if p >= 1 && p <= 65535 {
		return ""
	}
	return fmt.Sprintf("port number %d must be in the range 1..65535", p)
}

// ServiceEntry returns what ValidateServiceEntry rejects, after the metadata checks, in Istio's
// order. Its warnings (partial wildcards, TCP ports without addresses, a selector without
// labels) are not reported.
func ServiceEntry(m Meta, spec *networking.ServiceEntry) []Problem {
	if ps := metadataAndSelector(m, spec.GetWorkloadSelector()); ps != nil {
		return ps
	}
	var l list
	if spec.GetWorkloadSelector() != nil && spec.Endpoints != nil {
		l.add("spec.endpoints", "only one of WorkloadSelector or Endpoints is allowed in Service Entry",
			"istiod takes the endpoints from the workloads the selector picks and ignores spec.endpoints")
	}
	if len(spec.GetHosts()) == 0 {
		l.add("spec.hosts", "service entry must have at least one host", "istiod builds no service from the ServiceEntry")
	}
	for i, h := range spec.GetHosts() {
		at := fmt.Sprintf("spec.hosts[%d]", i)
		if h == "*" {
			l.add(at, "invalid host *", seAsWritten)
		} else if msg := wildcardDomain(h); msg != "" {
			l.add(at, msg, seAsWritten)
		}
	}
	cidr := false
	for i, a := range spec.GetAddresses() {
		cidr = cidr || strings.Contains(a, "/")
		// agent.ValidateIPSubnet
		if strings.Count(a, "/") == 1 {
			if _, err := netip.ParsePrefix(a); err != nil {
				l.add(fmt.Sprintf("spec.addresses[%d]", i), a+" is not a valid CIDR block", seAsWritten)
			}
		} else if _, err := netip.ParseAddr(a); err != nil {
			l.add(fmt.Sprintf("spec.addresses[%d]", i), a+" is not a valid IP", seAsWritten)
		}
	}
	res := spec.GetResolution()
	if cidr && res != networking.ServiceEntry_NONE && res != networking.ServiceEntry_STATIC {
		l.add("spec.resolution", "CIDR addresses are allowed only for NONE/STATIC resolution types", seAsWritten)
	}
	names := map[string]bool{}
	numbers := map[uint32]bool{}
	for i, p := range spec.GetPorts() {
		at := fmt.Sprintf("spec.ports[%d]", i)
		if p == nil {
			l.add(at, "service entry port may not be null", seAsWritten)
			continue
		}
		if names[p.Name] {
			l.add(at+".name", fmt.Sprintf("service entry port name %q already defined", p.Name), seAsWritten)
		}
		names[p.Name] = true
		if numbers[p.Number] {
			l.add(at+".number", fmt.Sprintf("service entry port %d already defined", p.Number), seAsWritten)
		}
		numbers[p.Number] = true
		if p.TargetPort != 0 {
			if msg := portNumber(int(p.TargetPort)); msg != "" {
				l.add(at+".targetPort", msg, seAsWritten)
			}
		}
		if !isDNS1123Label(p.Name) {
			l.add(at+".name", "invalid port name: "+p.Name, seAsWritten)
		}
		if p.Protocol != "" && protocolOf(p.Protocol) == "" {
			l.add(at+".protocol", "unsupported protocol: "+p.Protocol, "istiod reads an unknown protocol as unsupported, and treats the port as one whose protocol it detects (as for a port without protocol)")
		}
		if msg := portNumber(int(p.Number)); msg != "" {
			l.add(at+".number", msg, seAsWritten)
		}
	}
	switch res {
	case networking.ServiceEntry_NONE:
		if len(spec.GetEndpoints()) != 0 {
			l.add("spec.endpoints", "no endpoints should be provided for resolution type none", seAsWritten)
		}
	case networking.ServiceEntry_STATIC:
		for i, ep := range spec.GetEndpoints() {
			at := fmt.Sprintf("spec.endpoints[%d]", i)
			if ep == nil {
				l.add(at, "endpoint cannot be nil", seAsWritten)
				continue
			}
			l.staticEndpoint(at, ep, names)
		}
	case networking.ServiceEntry_DNS, networking.ServiceEntry_DNS_ROUND_ROBIN:
		if len(spec.GetEndpoints()) == 0 {
			for i, h := range spec.GetHosts() {
				if msg := fqdn(h); msg != "" {
					l.add(fmt.Sprintf("spec.hosts[%d]", i), fmt.Sprintf("hosts must be FQDN or contain only prefix wildcards if no endpoints are provided for resolution mode %s, %s", res, msg),
						"istiod gives Envoy the host itself, as written, as the endpoint address to resolve")
					break
				}
			}
		}
		if res == networking.ServiceEntry_DNS_ROUND_ROBIN && len(spec.GetEndpoints()) > 1 {
			l.add("spec.endpoints", fmt.Sprintf("there must only be 0 or 1 endpoint for resolution mode %s", res), seAsWritten)
		}
		for i, ep := range spec.GetEndpoints() {
			at := fmt.Sprintf("spec.endpoints[%d]", i)
			if ep == nil {
				l.add(at, "endpoint cannot be nil", seAsWritten)
				continue
			}
			if _, err := netip.ParseAddr(ep.Address); err != nil && fqdn(ep.Address) != "" {
				l.add(at+".address", fmt.Sprintf("endpoint address %q is not a valid FQDN or an IP address", ep.Address), seAsWritten)
			}
			for _, msg := range labelErrors(ep.GetLabels()) {
				l.add(at+".labels", msg, endpointLabelsAsWritten)
			}
			l.endpointPorts(at, ep.GetPorts(), names)
		}
		if len(spec.GetAddresses()) > 0 {
			for i, p := range spec.GetPorts() {
				if p == nil {
					l.add(fmt.Sprintf("spec.ports[%d]", i), "ports cannot be nil", seAsWritten)
					continue
				}
				if pr := protocolOf(p.Protocol); pr == "tcp" || pr == "https" || pr == "tls" || pr == "mongo" || pr == "redis" || pr == "mysql" {
					break
				}
			}
		}
	case networking.ServiceEntry_DYNAMIC_DNS:
		if len(spec.GetHosts()) == 0 {
			l.add("spec.hosts", fmt.Sprintf("at least one wildcard host must be provided for resolution type %s", res), seAsWritten)
		}
		for i, h := range spec.GetHosts() {
			if !strings.HasPrefix(h, "*") {
				l.add(fmt.Sprintf("spec.hosts[%d]", i), fmt.Sprintf("host must be wildcarded for resolution mode %s", res), seAsWritten)
			}
		}
		if len(spec.GetAddresses()) != 0 {
			l.add("spec.addresses", fmt.Sprintf("addresses cannot be set for resolution type %s. HTTP route domains will only be generatedfrom the hosts field values", res), seAsWritten)
		}
		if len(spec.GetEndpoints()) != 0 {
			l.add("spec.endpoints", fmt.Sprintf("endpoints cannot be set for resolution type %s. Destination IP address determined from hostsfield values", res), seAsWritten)
		}
		for i, p := range spec.GetPorts() {
			if p == nil {
				l.add(fmt.Sprintf("spec.ports[%d]", i), "port cannot be nil", seAsWritten)
				continue
			}
			if pr := protocolOf(p.Protocol); pr != "http" && pr != "tls" && pr != "grpc" && pr != "http2" {
				l.add(fmt.Sprintf("spec.ports[%d].protocol", i), fmt.Sprintf("only HTTP, TLS, GRPC, and HTTP2 protocols are supported for resolution type %s", res), seAsWritten)
			}
		}
		loc := spec.GetLocation()
		if loc != networking.ServiceEntry_MESH_EXTERNAL && loc != networking.ServiceEntry_MESH_INTERNAL {
			l.add("spec.location", fmt.Sprintf("location must be MESH_EXTERNAL or MESH_INTERNAL for resolution type %s", res), seAsWritten)
		}
		if w, ok := m.Labels["istio.io/use-waypoint"]; loc == networking.ServiceEntry_MESH_INTERNAL && ok && w != "" && !strings.EqualFold(w, "none") {
			l.add("spec.location", fmt.Sprintf("location MESH_INTERNAL with resolution type %s is not supported when using waypoints", res), seAsWritten)
		}
	default:
		l.add("spec.resolution", "unsupported resolution type "+networking.ServiceEntry_Resolution_name[int32(res)], seAsWritten)
	}
	if res != networking.ServiceEntry_NONE && len(spec.GetHosts()) > 1 {
		for i, p := range spec.GetPorts() {
			if p == nil {
				l.add(fmt.Sprintf("spec.ports[%d]", i), "ports cannot be nil", seAsWritten)
				continue
			}
			if pr := protocolOf(p.Protocol); !protocolIsHTTP(pr) && !protocolIsTLS(pr) {
				l.add(fmt.Sprintf("spec.ports[%d].protocol", i), "multiple hosts provided with non-HTTP, non-TLS ports", seAsWritten)
				break
			}
		}
	}
	for _, p := range exportToErrors(m.Namespace, spec.GetExportTo(), true, false) {
		field := "spec.exportTo"
		if p.at >= 0 {
			field = fmt.Sprintf("spec.exportTo[%d]", p.at)
		}
		l.add(field, p.msg, exportToIstiod(p.msg, "service"))
	}
	return l
}

// endpointLabelsAsWritten is what istiod does with endpoint labels the webhook rejects.
const endpointLabelsAsWritten = "istiod copies the labels onto the endpoint as written; a DestinationRule subset can select it only by the same labels"

// endpointAsWritten is what istiod does with an endpoint value the webhook rejects, in a
// ServiceEntry's endpoints or a WorkloadEntry.
const endpointAsWritten = "istiod does not check it and builds the endpoint from the entry as written (the answer's rows say what it reads)"

// WorkloadEntry returns what ValidateWorkloadEntry rejects, after the metadata checks:
// validateWorkloadEntry with FQDN addresses allowed and no service ports to compare with.
func WorkloadEntry(m Meta, spec *networking.WorkloadEntry) []Problem {
	if ps := checkMetadata(m, false, ""); ps != nil {
		return ps
	}
	var l list
	l.workloadEntry("spec", spec, nil, true)
	return l
}

// staticEndpoint is validateWorkloadEntry for a STATIC ServiceEntry's endpoint (no FQDN
// addresses, ports the ServiceEntry names).
func (l *list) staticEndpoint(at string, ep *networking.WorkloadEntry, serviceNames map[string]bool) {
	l.workloadEntry(at, ep, serviceNames, false)
}

// workloadEntry is validateWorkloadEntry: an address (an IP, an FQDN where allowed, or unix://
// with an absolute path and no ports), ports (named by the ServiceEntry when serviceNames is not
// nil), labels.
func (l *list) workloadEntry(at string, ep *networking.WorkloadEntry, serviceNames map[string]bool, allowFQDN bool) {
	addr := ep.GetAddress()
	if addr == "" && ep.GetNetwork() == "" {
		l.add(at+".address", "address is required", endpointAsWritten)
		return
	}
	unix := false
	if rest, ok := strings.CutPrefix(addr, "unix://"); ok {
		unix = true
		// ValidateUnixAddress
		switch {
		case rest == "":
			l.add(at+".address", "unix address must not be empty", endpointAsWritten)
		case strings.HasPrefix(rest, "@"):
		case !path.IsAbs(rest) || strings.HasSuffix(rest, "/"):
			l.add(at+".address", rest+" is not an absolute path to a file", endpointAsWritten)
		}
		if len(ep.GetPorts()) != 0 {
			l.add(at+".ports", fmt.Sprintf("unix endpoint %s must not include ports", addr), endpointAsWritten)
		}
	} else if _, err := netip.ParseAddr(addr); addr != "" && err != nil {
		if !allowFQDN {
			l.add(at+".address", fmt.Sprintf("endpoint address %q is not a valid IP address", addr), endpointAsWritten)
		} else if fqdn(addr) != "" {
			l.add(at+".address", fmt.Sprintf("endpoint address %q is not a valid FQDN or an IP address", addr), endpointAsWritten)
		}
	}
	l.endpointPorts(at, ep.GetPorts(), serviceNames)
	for _, msg := range labelErrors(ep.GetLabels()) {
		l.add(at+".labels", msg, endpointLabelsAsWritten)
	}
	if unix && serviceNames != nil && len(serviceNames) != 1 {
		l.add(at+".address", "exactly 1 service port required for unix endpoints", endpointAsWritten)
	}
}

// endpointPorts checks an endpoint's ports map: names the ServiceEntry defines, port names and
// numbers. Istio walks the map in Go's random order; the errors come here by name.
func (l *list) endpointPorts(at string, ports map[string]uint32, serviceNames map[string]bool) {
	for _, name := range slices.Sorted(maps.Keys(ports)) {
		f := fmt.Sprintf("%s.ports[%s]", at, name)
		if serviceNames != nil && !serviceNames[name] {
			l.add(f, fmt.Sprintf("endpoint port %v is not defined by the service entry", ports[name]), endpointAsWritten)
		}
		if !isDNS1123Label(name) {
			l.add(f, "invalid port name: "+name, endpointAsWritten)
		}
		if msg := portNumber(int(ports[name])); msg != "" {
			l.add(f, msg, endpointAsWritten)
		}
	}
}
