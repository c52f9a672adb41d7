package meshhost

import (
	"net/netip"
	"strings"
)

// DomainSuffix is the cluster domain istiod appends to Kubernetes Service names
// (`<name>.<ns>.svc.<domain>`); istiod's default, which this tool assumes.
const DomainSuffix = "cluster.local"

// Name is a host name, possibly a wildcard (`*.example.com`, `*`): host.Name.
type Name string

// IsWildCarded is host.Name.IsWildCarded: the name starts with `*`.
func (n Name) IsWildCarded() bool { return len(n) > 0 && n[0] == '*' }

// Matches is host.Name.Matches: the two names overlap, one covering the other in either
// direction (`*.com` and `foo.com` match both ways; `*.foo.com` and `foo.com` do not).
func (n Name) Matches(o Name) bool {
	nw, ow := n.IsWildCarded(), o.IsWildCarded()
	switch {
	case nw && ow:
		if len(n) < len(o) {
			return strings.HasSuffix(string(o[1:]), string(n[1:]))
		}
		return strings.HasSuffix(string(n[1:]), string(o[1:]))
	case nw:
		return strings.HasSuffix(string(o), string(n[1:]))
	case ow:
		return strings.HasSuffix(string(n), string(o[1:]))
	}
	return n == o
}

// SubsetOf is host.Name.SubsetOf: Matches in one direction only, n is covered by o (`foo.com`
// by `*.com`, `*.foo.com` by `*.com`, never a wildcard by a name without one).
func (n Name) SubsetOf(o Name) bool {
	nw, ow := n.IsWildCarded(), o.IsWildCarded()
	switch {
	case nw && ow:
		if len(n) < len(o) {
			return false
		}
		return strings.HasSuffix(string(n[1:]), string(o[1:]))
	case nw:
		return false
	case ow:
		return strings.HasSuffix(string(n), string(o[1:]))
	}
	return n == o
}

// MoreSpecific is host.MoreSpecific: a name without a wildcard before a wildcard, a longer name
// before a shorter one, then in lexicographic order.
func MoreSpecific(a, b Name) bool {
	if len(a) == 0 && len(b) == 0 {
		return true
	}
	aw, bw := a.IsWildCarded(), b.IsWildCarded()
	if aw != bw {
		return bw
	}
	if len(a) == len(b) {
		return a < b
	}
	return len(a) > len(b)
}

// ResolveShortname is model.ResolveShortnameToFQDN: `*` and IP addresses stay as they are, a
// name with a dot is taken literally, and only a name without any dot is expanded in the
// namespace of the object that names it, to `<name>.<namespace>.svc.cluster.local`.
func ResolveShortname(h, namespace string) string {
	if h == "" || h == "*" {
		return h
	}
	if _, err := netip.ParseAddr(h); err == nil {
		return h
	}
	if !strings.Contains(h, ".") {
		out := h
		if namespace != "" {
			out += "." + namespace
		}
		return out + ".svc." + DomainSuffix
	}
	return h
}

// Candidates are the host names a host typed on the command line may stand for, most literal
// first: the host as typed and, for the forms a sidecar's DNS proxy resolves to a Kubernetes
// Service (generateAltHosts in istio.io/istio pkg/dns/client/dns.go: `name` in the client's
// namespace, `name.namespace`, `name.namespace.svc`), the Service's FQDN. A short name is looked
// up in namespace (default: "default"). `name.namespace.svc.cluster` is not such a form, and
// `name.svc` is the Service `name` of namespace `svc`. A wildcard stands only for itself.
func Candidates(h, namespace string) []string {
	out := []string{h}
	if Name(h).IsWildCarded() {
		return out
	}
	switch dots := strings.Count(h, "."); {
	case dots == 0:
		if namespace == "" {
			namespace = "default"
		}
		out = append(out, h+"."+namespace+".svc."+DomainSuffix)
	case dots == 1:
		out = append(out, h+".svc."+DomainSuffix)
	case dots == 2 && strings.HasSuffix(h, ".svc"):
		out = append(out, h+"."+DomainSuffix)
	}
	return out
}

// ServiceNamespace is the namespace of the Kubernetes Service a typed host names: namespace for
// a short name, `ns` for `name.ns` and `name.ns.svc[.<domain>]`, "" for any other host (a
// ServiceEntry host, whose namespace only the ServiceEntries tell).
func ServiceNamespace(h, namespace string) string {
	if Name(h).IsWildCarded() {
		return ""
	}
	labels := strings.Split(h, ".")
	switch {
	case len(labels) == 1:
		return namespace
	case len(labels) == 2:
		return labels[1]
	case len(labels) >= 3 && labels[2] == "svc":
		return labels[1]
	}
	return ""
}
