package render

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"path/filepath"
	"strings"
	"unicode"

	"github.com/owenrumney/go-sarif/v3/pkg/report/v210/sarif"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/explain"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/explain/diag"
)

// Tool names in the SARIF run.
const (
	sarifToolName = "kubectl-mesh-explain"
	sarifToolURI  = "https://github.com/mesh-explain/kubectl-mesh-explain"
	sarifRuleHelp = sarifToolURI + "/blob/main/docs/diagnostics.md"
)

// sarifPrinter prints a check report as SARIF 2.1.0 (docs/ci.md): one rule per diagnostic ID,
// one result per finding, located at the file and line of the field to change. A finding of
// an object read from the cluster has no file: it is located by the object's name alone (a
// logical location). Silenced findings carry a suppression: inSource for the annotation,
// external for --ignore.
type sarifPrinter struct{}

// sarifLevel maps a severity to a SARIF level.
func sarifLevel(s explain.Severity) string {
	switch s {
	case explain.SeverityError:
		return "error"
	case explain.SeverityWarning:
		return "warning"
	}
	return "note"
}

func (sarifPrinter) PrintCheck(w io.Writer, r *explain.CheckReport) error {
	report := sarif.NewReport()
	run := sarif.NewRunWithInformationURI(sarifToolName, sarifToolURI)
	report.AddRun(run)
	for _, f := range r.Findings {
		rule := run.AddRule(f.ID)
		if rule.HelpURI == nil {
			rule.WithDefaultConfiguration(sarif.NewReportingConfiguration().WithLevel(sarifLevel(f.Severity)))
			help := sarifRuleHelp
			if e, ok := diag.ID(f.ID).Entry(); ok {
				// The catalogue's title and general fix; the help page's section of the ID.
				rule.WithName(e.Title).
					WithShortDescription(sarif.NewMultiformatMessageString().WithText(e.Title)).
					WithHelp(sarif.NewMultiformatMessageString().WithText(e.Fix))
				help += "#" + anchor(f.ID+" — "+e.Title)
			}
			rule.WithHelpURI(help)
		}
		text := f.Message
		if f.Fix != "" {
			text += ". Fix: " + f.Fix
		}
		if a := (&checkTable{wide: false}).affected(f); a != "" {
			text += ". Affects " + strings.ReplaceAll(a, "\n", "; ")
		}
		res := run.CreateResultForRule(f.ID).
			WithLevel(sarifLevel(f.Severity)).
			WithMessage(sarif.NewTextMessage(text)).
			WithPartialFingerprints(map[string]string{"meshExplainFinding/v1": fingerprint(f)})
		if idx := run.GetRuleIndex(f.ID); idx >= 0 {
			res.WithRuleIndex(idx)
		}
		loc := sarif.NewLocation()
		located := false
		if f.Position != nil && f.Position.File != "" && f.Position.File != "-" {
			region := sarif.NewRegion().WithStartLine(max(f.Position.Line, 1))
			if f.Position.Col > 0 {
				region.WithStartColumn(f.Position.Col)
			}
			loc.WithPhysicalLocation(sarif.NewPhysicalLocation().
				WithArtifactLocation(sarif.NewSimpleArtifactLocation(filepath.ToSlash(f.Position.File))).
				WithRegion(region))
			located = true
		}
		if f.Resource != nil {
			name := f.Resource.String()
			if f.Field != "" {
				name += " " + f.Field
			}
			loc.AddLogicalLocation(sarif.NewLogicalLocation().WithFullyQualifiedName(name).WithKind("resource"))
			located = true
		}
		if located {
			res.AddLocation(loc)
		}
		if f.Ignored != "" {
			kind := "external"
			if strings.HasPrefix(f.Ignored, "annotation ") {
				kind = "inSource"
			}
			res.AddSuppression(sarif.NewSuppression().WithKind(kind).WithJustification(f.Ignored))
		}
	}
	if err := report.PrettyWrite(w); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

// anchor is the fragment a Markdown renderer gives a heading: lower case, spaces to hyphens,
// other punctuation dropped.
func anchor(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// fingerprint identifies a finding across runs (a code-scanning tool matches results by it):
// a hash of its ID, resources and message.
func fingerprint(f explain.Finding) string {
	h := sha256.New()
	h.Write([]byte(f.ID))
	for _, r := range f.Resources {
		h.Write([]byte{0})
		h.Write([]byte(r.String()))
	}
	h.Write([]byte{0})
	h.Write([]byte(f.Message))
	return hex.EncodeToString(h.Sum(nil))[:32]
}
