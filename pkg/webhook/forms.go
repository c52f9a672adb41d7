package webhook

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// The forms of names Istio's validation checks, from istio/istio pkg/config/labels/instance.go
// (dns1123LabelFmt, wildcardPrefix, qualifiedNameFmt, dnsNamePrefixFmt).
const (
	dns1123LabelFmt   = "[a-zA-Z0-9](?:[-a-zA-Z0-9]*[a-zA-Z0-9])?"
	wildcardPrefixFmt = `(\*|(\*|\*-)?` + dns1123LabelFmt + `)`
	qualifiedNameFmt  = "(?:[A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
	dnsNamePrefixFmt  = dns1123LabelFmt + `(?:\.` + dns1123LabelFmt + `)*/`
	dns1123LabelMax   = 63
	dnsNamePrefixMax  = 253
)

var (
	tagRegexp            = regexp.MustCompile("^(" + dnsNamePrefixFmt + ")?(" + qualifiedNameFmt + ")$")
	labelValueRegexp     = regexp.MustCompile("^(" + qualifiedNameFmt + ")?$")
	dns1123LabelRegexp   = regexp.MustCompile("^" + dns1123LabelFmt + "$")
	wildcardPrefixRegexp = regexp.MustCompile("^" + wildcardPrefixFmt + "$")
)

// isDNS1123Label is labels.IsDNS1123Label.
func isDNS1123Label(v string) bool {
	return len(v) <= dns1123LabelMax && dns1123LabelRegexp.MatchString(v)
}

// isWildcardDNS1123Label is labels.IsWildcardDNS1123Label: a DNS-1123 label, `*`, or a label
// starting with `*` or `*-`.
func isWildcardDNS1123Label(v string) bool {
	return len(v) <= dns1123LabelMax && wildcardPrefixRegexp.MatchString(v)
}

// dnsPreconditions is agent.CheckDNS1123Preconditions.
func dnsPreconditions(name string) string {
	if len(name) > 255 {
		return fmt.Sprintf("domain name %q too long (max 255)", name)
	}
	if name == "" {
		return "empty domain name not allowed"
	}
	return ""
}

// dns1123Labels is agent.ValidateDNS1123Labels: every dot-separated label a DNS-1123 label (the
// last may be empty, for a trailing dot), and a top-level label that is not all digits.
func dns1123Labels(domain string) string {
	parts := strings.Split(domain, ".")
	tld := parts[len(parts)-1]
	if _, err := strconv.Atoi(tld); err == nil {
		return fmt.Sprintf("domain name %q invalid (top level domain %q cannot be all-numeric)", domain, tld)
	}
	for i, label := range parts {
		if i == len(parts)-1 && label == "" {
			return ""
		}
		if !isDNS1123Label(label) {
			return fmt.Sprintf("domain name %q invalid (label %q invalid)", domain, label)
		}
	}
	return ""
}

// fqdn is agent.ValidateFQDN.
func fqdn(name string) string {
	if msg := dnsPreconditions(name); msg != "" {
		return msg
	}
	return dns1123Labels(name)
}

// wildcardDomain is agent.ValidateWildcardDomain: a domain whose first label may be a wildcard.
func wildcardDomain(domain string) string {
	if msg := dnsPreconditions(domain); msg != "" {
		return msg
	}
	first, rest, more := strings.Cut(domain, ".")
	if !isWildcardDNS1123Label(first) {
		return fmt.Sprintf("domain name %q invalid (label %q invalid)", domain, first)
	}
	if more {
		return dns1123Labels(rest)
	}
	return ""
}

// tagKey is labels.validateTagKey: a Kubernetes label name.
func tagKey(k string) string {
	m := tagRegexp.FindStringSubmatch(k)
	if m == nil {
		return fmt.Sprintf("invalid tag key: %q", k)
	}
	if len(m[1]) > 0 && len(m[1])-1 > dnsNamePrefixMax {
		return fmt.Sprintf("invalid tag key: %q (DNS prefix is too long)", k)
	}
	if len(m[2]) > dns1123LabelMax {
		return fmt.Sprintf("invalid tag key: %q (name is too long)", k)
	}
	return ""
}

// labelErrors is labels.Instance.Validate: each key a label name, each value a label value.
// Istio walks the map in Go's random order; the errors come here by key.
func labelErrors(m map[string]string) []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if msg := tagKey(k); msg != "" {
			out = append(out, msg)
		}
		if !labelValueRegexp.MatchString(m[k]) {
			out = append(out, fmt.Sprintf("invalid tag value: %q", m[k]))
		}
	}
	return out
}

// selectorErrors is validateWorkloadSelector (and ValidateAlphaWorkloadSelector, the same checks
// on the networking API's selector): no empty key, no `*` in a key or a value. A selector
// without labels is only a warning. The errors come by key.
func selectorErrors(m map[string]string) []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		kv := fmt.Sprintf("%s=%s", k, m[k])
		if k == "" {
			out = append(out, fmt.Sprintf("empty key is not supported in selector: %q", kv))
		}
		if strings.Contains(k, "*") || strings.Contains(m[k], "*") {
			out = append(out, fmt.Sprintf("wildcard is not supported in selector: %q", kv))
		}
	}
	return out
}

// selectorMatchesNothing is what istiod does with a selector label the webhook rejects: it
// compares the labels as written, and no Kubernetes object can carry an empty key or a `*`.
const selectorMatchesNothing = "istiod compares the labels as written; no pod can carry an empty label key or a `*` in a label, so the selector selects no workload"

// exportToProblem is one error of validateExportTo, with the index of the entry it is about (-1
// for the list as a whole).
type exportToProblem struct {
	at  int
	msg string
}

// exportToErrors is validateExportTo: `.`, `*` or a namespace name (DNS-1123 label), `~` only
// on a ServiceEntry, no duplicates (`.` counts as the object's own namespace), `*` or `~` alone,
// and a DestinationRule with a workload selector exported to its own namespace only.
func exportToErrors(namespace string, exportTo []string, isServiceEntry, drWithSelector bool) []exportToProblem {
	if len(exportTo) == 0 {
		return nil
	}
	var out []exportToProblem
	set := map[string]bool{}
	for i, e := range exportTo {
		key := e
		if e == "." {
			key = namespace
		}
		switch {
		case set[key] && key != e:
			out = append(out, exportToProblem{i, "duplicate entries in exportTo: . and current namespace " + namespace})
		case set[key]:
			out = append(out, exportToProblem{i, "duplicate entries in exportTo for entry " + e})
		case isServiceEntry && e == "~":
			set[key] = true
		default:
			// visibility.Instance.Validate, on the key (the namespace for `.`).
			switch {
			case key == "." || key == "*":
				set[key] = true
			case key == "~":
				out = append(out, exportToProblem{i, "exportTo ~ (none) is not allowed for Istio configuration objects"})
			case !isDNS1123Label(key):
				out = append(out, exportToProblem{i, "only .,*, or a valid DNS 1123 label is allowed as exportTo entry"})
			default:
				set[key] = true
			}
		}
	}
	if drWithSelector && len(set) > 0 {
		if set[namespace] {
			if len(set) > 1 {
				out = append(out, exportToProblem{-1, "destination rule with workload selector cannot have multiple entries in exportTo"})
			}
		} else {
			out = append(out, exportToProblem{-1, "destination rule with workload selector cannot have exportTo beyond current namespace"})
		}
	}
	if set["*"] && len(exportTo) > 1 {
		out = append(out, exportToProblem{-1, "cannot have both public (*) and non-public exportTo values for a resource"})
	}
	if set["~"] && len(exportTo) > 1 {
		out = append(out, exportToProblem{-1, "cannot export service entry to no one (~) and someone"})
	}
	return out
}
