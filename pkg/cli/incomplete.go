package cli

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/explain"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/model"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/source"
)

// IncompleteError is an answer that was printed but lacks something it needed: a kind that
// could not be read (forbidden, failed, timed out) or an object skipped as malformed. Main
// exits ExitIncomplete; --allow-partial exits 0.
type IncompleteError struct {
	// What names what could not be read, as the banner does.
	What []string
}

func (e *IncompleteError) Error() string {
	return fmt.Sprintf("the answer is incomplete: %s could not be read (the warnings say why); "+
		"--allow-partial exits 0 with a partial answer", strings.Join(e.What, ", "))
}

// optionalKinds are read only for an extra warning: without them the answer is still whole.
// EnvoyFilters are read only to say that one may patch the Clusters shown.
var optionalKinds = []string{source.KindEnvoyFilter}

// gaps is what an answer needed and the snapshot lacks.
type gaps struct {
	// what names each gap as the banner does: a kind in the plural (DestinationRules), an
	// object (DestinationRule bookinfo/reviews), or the file position of one whose name is
	// unknown.
	what []string
	// warnings say why, one per gap; reasons are the part of each that a warning the engine
	// already gives would repeat.
	warnings, reasons []string
}

// unread returns the gaps of a snapshot: each kind that could not be read (forbidden, failed,
// timed out), the mesh config, and each object skipped as malformed.
func unread(snap *model.Snapshot) gaps {
	var g gaps
	if snap == nil {
		return g
	}
	for _, kind := range source.Kinds() {
		why, ok := snap.Incomplete[kind]
		if !ok || slices.Contains(optionalKinds, kind) {
			continue
		}
		g.what = append(g.what, source.Plural(kind))
		g.warnings = append(g.warnings, fmt.Sprintf("%s could not be read (%s): the answer may be incomplete", source.Plural(kind), why))
		g.reasons = append(g.reasons, why)
	}
	if why, ok := snap.Incomplete["MeshConfig"]; ok {
		g.what = append(g.what, "the mesh config")
		g.warnings = append(g.warnings, "the mesh config could not be read: "+why)
		g.reasons = append(g.reasons, why)
	}
	for _, is := range snap.Issues {
		if !skipsObject(is) {
			continue
		}
		name := "an object"
		switch {
		case is.Resource != nil:
			name = is.Resource.String()
		case is.Position != nil:
			name = "the object at " + is.Position.String()
		}
		if !slices.Contains(g.what, name) {
			g.what = append(g.what, name)
		}
		g.warnings = append(g.warnings, is.String())
		g.reasons = append(g.reasons, is.Message)
	}
	return g
}

// skipsObject reports whether a load issue says an object was left out of the snapshot: an
// error about an object (a mesh config istiod ignores in favour of its defaults is not one).
func skipsObject(is model.LoadIssue) bool {
	if is.Severity != "error" {
		return false
	}
	return !strings.HasPrefix(is.Field, "data.") || is.Resource == nil || is.Resource.Kind != "ConfigMap"
}

// mark records the gaps in a Result: in Incomplete (the banner of the table, the document's
// `incomplete`) and in its warnings, except where a warning already gives the reason.
func (g gaps) mark(res *explain.Result) {
	if res == nil || len(g.what) == 0 {
		return
	}
	res.Incomplete = g.what
	res.Warnings = g.addTo(res.Warnings)
}

// addTo appends to ws the warnings of the gaps whose reason no warning of ws gives.
func (g gaps) addTo(ws []string) []string {
	for i, w := range g.warnings {
		if !slices.ContainsFunc(ws, func(x string) bool { return strings.Contains(x, g.reasons[i]) }) {
			ws = append(ws, w)
		}
	}
	return ws
}

// incomplete returns the error that sets the exit code of an answer that lacks what, or nil
// (nothing lacks, or --allow-partial).
func (o *CommonOptions) incomplete(g gaps) error {
	if len(g.what) == 0 || o.AllowPartial {
		return nil
	}
	return &IncompleteError{What: g.what}
}

// notFoundKinds are the kinds whose lists decide that a subject does not exist, by the first
// word of NotFoundError.What.
var notFoundKinds = map[string][]string{
	"host":       {source.KindService, source.KindServiceEntry},
	"pod":        {source.KindPod},
	"pods":       {source.KindPod},
	"deployment": {source.KindDeployment},
	"service":    {source.KindService},
	"namespace":  {source.KindNamespace},
}

// notFoundUnread turns "not found" into the read that failed when the list that would have
// found the subject could not be read: `host "reviews" not found` is said only when the
// Services were read.
func notFoundUnread(err error, snap *model.Snapshot) error {
	var nf *explain.NotFoundError
	if snap == nil || !errors.As(err, &nf) {
		return err
	}
	word, _, _ := strings.Cut(nf.What, " ")
	word, _, _ = strings.Cut(word, "/")
	var why []string
	for _, kind := range notFoundKinds[word] {
		if reason, ok := snap.Incomplete[kind]; ok {
			why = append(why, fmt.Sprintf("%s could not be read (%s)", source.Plural(kind), reason))
		}
	}
	if len(why) == 0 {
		return err
	}
	return fmt.Errorf("cannot tell whether %s exists: %s", nf.What, strings.Join(why, "; "))
}
