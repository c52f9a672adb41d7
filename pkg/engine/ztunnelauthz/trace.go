package ztunnelauthz

import (
	"encoding/base64"
	"fmt"
	"net/netip"
	"strconv"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/model"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/provenance"
)

// originOf builds origins for the fields of one input object. snap may be nil (the exported
// conversion functions run without a snapshot); origins then carry no file position.
type originOf struct {
	snap  *model.Snapshot
	layer provenance.Layer
	key   model.ObjectKey
}

// at returns the origin of one input field, with its file position when the snapshot knows it.
func (o originOf) at(field, note string) provenance.Origin {
	var org provenance.Origin
	if o.snap != nil {
		org = o.snap.Origin(o.layer, o.key, field)
	} else {
		ref := o.key.Ref()
		org = provenance.Origin{Layer: o.layer, Resource: &ref, Field: field}
	}
	org.Note = note
	return org
}

// The builders below hold an Authorization's groups, clauses and matches together with the
// origin of each, so that the output paths (which depend on the final order) are assigned once
// the policy is complete.

type valueTrace struct {
	// field is the Match field with its index, e.g. `notPrincipals[0]`.
	field  string
	value  string
	origin provenance.Origin
}

// matchBuilder is one Match under construction; every value added records its origin.
type matchBuilder struct {
	m      *Match
	origin provenance.Origin
	values []valueTrace
}

func (mb *matchBuilder) addString(field string, sm *StringMatch, org provenance.Origin) {
	var n int
	switch field {
	case "namespaces":
		mb.m.Namespaces = append(mb.m.Namespaces, sm)
		n = len(mb.m.Namespaces)
	case "notNamespaces":
		mb.m.NotNamespaces = append(mb.m.NotNamespaces, sm)
		n = len(mb.m.NotNamespaces)
	case "principals":
		mb.m.Principals = append(mb.m.Principals, sm)
		n = len(mb.m.Principals)
	case "notPrincipals":
		mb.m.NotPrincipals = append(mb.m.NotPrincipals, sm)
		n = len(mb.m.NotPrincipals)
	default:
		panic("ztunnelauthz: unknown string match field " + field)
	}
	mb.values = append(mb.values, valueTrace{field: fmt.Sprintf("%s[%d]", field, n-1), value: sm.String(), origin: org})
}

func (mb *matchBuilder) addServiceAccount(field string, sa *ServiceAccountMatch, org provenance.Origin) {
	var n int
	if field == "serviceAccounts" {
		mb.m.ServiceAccounts = append(mb.m.ServiceAccounts, sa)
		n = len(mb.m.ServiceAccounts)
	} else {
		mb.m.NotServiceAccounts = append(mb.m.NotServiceAccounts, sa)
		n = len(mb.m.NotServiceAccounts)
	}
	mb.values = append(mb.values, valueTrace{field: fmt.Sprintf("%s[%d]", field, n-1), value: sa.Namespace + "/" + sa.ServiceAccount, origin: org})
}

func (mb *matchBuilder) addAddress(field string, a *Address, org provenance.Origin) {
	var n int
	switch field {
	case "sourceIps":
		mb.m.SourceIps = append(mb.m.SourceIps, a)
		n = len(mb.m.SourceIps)
	case "notSourceIps":
		mb.m.NotSourceIps = append(mb.m.NotSourceIps, a)
		n = len(mb.m.NotSourceIps)
	case "destinationIps":
		mb.m.DestinationIps = append(mb.m.DestinationIps, a)
		n = len(mb.m.DestinationIps)
	case "notDestinationIps":
		mb.m.NotDestinationIps = append(mb.m.NotDestinationIps, a)
		n = len(mb.m.NotDestinationIps)
	default:
		panic("ztunnelauthz: unknown address field " + field)
	}
	mb.values = append(mb.values, valueTrace{field: fmt.Sprintf("%s[%d]", field, n-1), value: addressString(a), origin: org})
}

func (mb *matchBuilder) addPort(field string, p uint32, org provenance.Origin) {
	var n int
	if field == "destinationPorts" {
		mb.m.DestinationPorts = append(mb.m.DestinationPorts, p)
		n = len(mb.m.DestinationPorts)
	} else {
		mb.m.NotDestinationPorts = append(mb.m.NotDestinationPorts, p)
		n = len(mb.m.NotDestinationPorts)
	}
	mb.values = append(mb.values, valueTrace{field: fmt.Sprintf("%s[%d]", field, n-1), value: strconv.FormatUint(uint64(p), 10), origin: org})
}

// rulesBuilder is one clause (Rules) under construction.
type rulesBuilder struct {
	origin  provenance.Origin
	matches []*matchBuilder
}

// groupBuilder is one Group under construction.
type groupBuilder struct {
	origin provenance.Origin
	rules  []*rulesBuilder
}

// build turns the builders into Groups and records the origin of every group, clause, match and
// value under its output path (`groups[0].rules[1].matches[0].notPrincipals[0]`).
func build(groups []*groupBuilder, rec *provenance.Recorder) []*Group {
	var out []*Group
	for gi, gb := range groups {
		g := &Group{}
		gp := fmt.Sprintf("groups[%d]", gi)
		rec.Set(gp, fmt.Sprintf("%d clause(s)", len(gb.rules)), gb.origin)
		for ri, rb := range gb.rules {
			r := &Rules{}
			rp := fmt.Sprintf("%s.rules[%d]", gp, ri)
			rec.Set(rp, fmt.Sprintf("%d match(es)", len(rb.matches)), rb.origin)
			for mi, mb := range rb.matches {
				r.Matches = append(r.Matches, mb.m)
				mp := fmt.Sprintf("%s.matches[%d]", rp, mi)
				v := "{}"
				if !mb.m.IsEmpty() {
					v = fmt.Sprintf("%d value(s)", len(mb.values))
				}
				rec.Set(mp, v, mb.origin)
				for _, vt := range mb.values {
					rec.Set(mp+"."+vt.field, vt.value, vt.origin)
				}
			}
			g.Rules = append(g.Rules, r)
		}
		out = append(out, g)
	}
	return out
}

// addressString is the human form of an Address: `10.0.0.5/24`.
func addressString(a *Address) string {
	ip, ok := netip.AddrFromSlice(a.Address)
	if !ok {
		return base64.StdEncoding.EncodeToString(a.Address)
	}
	return fmt.Sprintf("%s/%d", ip, a.Length)
}
