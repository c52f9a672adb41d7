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
	lists := map[string]*[]*StringMatch{
		"namespaces": &mb.m.Namespaces, "notNamespaces": &mb.m.NotNamespaces,
		"principals": &mb.m.Principals, "notPrincipals": &mb.m.NotPrincipals,
	}
	appendTraced(mb, field, lists[field], sm, sm.String(), org)
}

func (mb *matchBuilder) addServiceAccount(field string, sa *ServiceAccountMatch, org provenance.Origin) {
	list := &mb.m.NotServiceAccounts
	if field == "serviceAccounts" {
		list = &mb.m.ServiceAccounts
	}
	appendTraced(mb, field, list, sa, sa.Namespace+"/"+sa.ServiceAccount, org)
}

func (mb *matchBuilder) addAddress(field string, a *Address, org provenance.Origin) {
	lists := map[string]*[]*Address{
		"sourceIps": &mb.m.SourceIps, "notSourceIps": &mb.m.NotSourceIps,
		"destinationIps": &mb.m.DestinationIps, "notDestinationIps": &mb.m.NotDestinationIps,
	}
	appendTraced(mb, field, lists[field], a, addressString(a), org)
}

// appendTraced appends v to the match list named field and records its origin at
// `field[index]`. An unknown field name is a programming error.
func appendTraced[T any](mb *matchBuilder, field string, list *[]T, v T, display string, org provenance.Origin) {
	if list == nil {
		panic("ztunnelauthz: unknown match field " + field)
	}
	*list = append(*list, v)
	mb.values = append(mb.values, valueTrace{field: fmt.Sprintf("%s[%d]", field, len(*list)-1), value: display, origin: org})
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
