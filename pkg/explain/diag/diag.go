// Package diag is the catalogue of diagnostics: every ID an engine may report, with its
// severity, a short title and the general fix. Engines create diagnostics only through it
// (`diag.TLSConflict.New(msg, fix, refs...)`), so one finding has the same ID and severity
// wherever it is reported; docs/diagnostics.md explains each ID with an example, and a test
// keeps the two lists equal. `Sort` is the one order of a diagnostics list.
//
// It owns: ID, Entry, Catalogue, Sort.
// It may import: explain, provenance.
package diag

import (
	"cmp"
	"slices"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/explain"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/provenance"
)

// ID is a stable diagnostic identifier: D-prefixed for the cluster engine (and the index
// behind it), A-prefixed for the ambient authorization engine, S-prefixed for the sidecar authorization
// engine, W-prefixed for the waypoint authorization engine. An ID is never reused.
type ID string

// Entry is what the catalogue says about one ID.
type Entry struct {
	ID ID
	// Severity is the severity of the finding. Some IDs cover cases of different weight:
	// Also lists the other severities their cases use (see ID.At).
	Severity explain.Severity
	Also     []explain.Severity
	// Title names the finding in a few words (the heading in docs/diagnostics.md).
	Title string
	// Fix is the general remedy; each diagnostic carries the fix for its own case, naming the
	// objects and fields to change.
	Fix string
}

// Severities returns every severity the ID is reported at, its usual one first.
func (e Entry) Severities() []explain.Severity {
	return append([]explain.Severity{e.Severity}, e.Also...)
}

// Entry returns the catalogue entry of id, and false for an ID that is not in the catalogue.
func (id ID) Entry() (Entry, bool) {
	e, ok := index[id]
	return e, ok
}

// New returns a diagnostic of id at its catalogue severity, with the message and fix of this
// case and the objects involved.
func (id ID) New(msg, fix string, refs ...provenance.Ref) explain.Diagnostic {
	return explain.Diagnostic{ID: string(id), Severity: index[id].Severity, Message: msg, Resources: refs, Fix: fix}
}

// At is New at sev, one of the severities the catalogue lists for id: the IDs whose cases
// differ in weight (TLSConflict, PeerAuthenticationTie, LoadIssue) say which one applies.
func (id ID) At(sev explain.Severity, msg, fix string, refs ...provenance.Ref) explain.Diagnostic {
	d := id.New(msg, fix, refs...)
	d.Severity = sev
	return d
}

// Duplicates says which diagnostics Sort treats as repeats of one another.
type Duplicates int

const (
	// KeepAll keeps every diagnostic.
	KeepAll Duplicates = iota
	// SameMessage drops a diagnostic whose ID, severity and message an earlier one has (the
	// cluster engine: a host's clusters often share a cause, named by different objects).
	SameMessage
	// Identical drops only a diagnostic equal to an earlier one in every field.
	Identical
)

// Sort orders ds by severity (error first), then ID (the letter, then the number: D2 before
// D10), then message, keeping the order of equal ones, and removes the repeats dup names. It
// sorts ds in place and returns it shortened.
func Sort(ds []explain.Diagnostic, dup Duplicates) []explain.Diagnostic {
	slices.SortStableFunc(ds, func(a, b explain.Diagnostic) int {
		return cmp.Or(cmp.Compare(a.Severity.Rank(), b.Severity.Rank()), CompareIDs(a.ID, b.ID), cmp.Compare(a.Message, b.Message))
	})
	switch dup {
	case SameMessage:
		return slices.CompactFunc(ds, func(a, b explain.Diagnostic) bool {
			return a.ID == b.ID && a.Severity == b.Severity && a.Message == b.Message
		})
	case Identical:
		return slices.CompactFunc(ds, func(a, b explain.Diagnostic) bool {
			return a.ID == b.ID && a.Severity == b.Severity && a.Message == b.Message && a.Fix == b.Fix && slices.Equal(a.Resources, b.Resources)
		})
	}
	return ds
}

// CompareIDs orders IDs by their letter, then their number (D2 before D10, A09 before A10).
func CompareIDs(a, b string) int {
	na, pa := splitID(a)
	nb, pb := splitID(b)
	return cmp.Or(cmp.Compare(pa, pb), cmp.Compare(na, nb), cmp.Compare(a, b))
}

func splitID(id string) (int, string) {
	i := len(id)
	for i > 0 && id[i-1] >= '0' && id[i-1] <= '9' {
		i--
	}
	n := 0
	for _, c := range id[i:] {
		n = n*10 + int(c-'0')
	}
	return n, id[:i]
}
