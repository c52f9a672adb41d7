package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/explain"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/explain/diag"
)

// analyzeMessage is one message of `istioctl analyze -o json`.
type analyzeMessage struct {
	Code      string `json:"code"`
	Level     string `json:"level"`
	Message   string `json:"message"`
	Origin    string `json:"origin"`
	Reference string `json:"reference"`
}

// ist0101 is istioctl analyze's ReferencedResourceNotFound; its form for a VirtualService
// route to a subset no DestinationRule defines is `Referenced host+subset in destinationrule
// not found: "HOST+SUBSET"` (Istio: pkg/config/analysis/analyzers/virtualservice/destinationrules.go,
// DestinationRuleAnalyzer.analyzeVirtualService, which reports a subset that no DestinationRule
// of the host defines, whichever rule a client uses).
const ist0101 = "IST0101"

var subsetNotFoundRE = regexp.MustCompile(`^Referenced host\+subset in destinationrule not found: "([^"+]*)\+([^"]*)"$`)

// SubsetRef is an IST0101 for an undefined subset: a VirtualService routes to SUBSET of HOST
// (as the route spells it).
type SubsetRef struct {
	VirtualService string `json:"virtualService"` // NS/NAME
	Host           string `json:"host"`
	Subset         string `json:"subset"`
}

func (r SubsetRef) String() string {
	return fmt.Sprintf("VirtualService %s -> %s+%s", r.VirtualService, r.Host, r.Subset)
}

// AnalyzeComparison is what check and istioctl analyze found on the same input.
type AnalyzeComparison struct {
	// CheckIDs and AnalyzeCodes count the findings of check by ID and the messages of
	// analyze by code.
	CheckIDs     map[string]int `json:"checkIDs"`
	AnalyzeCodes map[string]int `json:"analyzeCodes"`
	// SubsetRefs are analyze's IST0101 messages for an undefined subset; Missing those check
	// did not report as diag.RouteToUndefinedSubset on the same VirtualService and subset.
	SubsetRefs []SubsetRef `json:"subsetRefs"`
	Missing    []SubsetRef `json:"missing"`
	// Both counts the analyze messages a check finding reports the same cause of, by pair
	// (`D10 = IST0101`, sameCauses); OnlyCheck counts, by ID, the check findings no analyze
	// message matches; OnlyAnalyze, by code, the analyze messages no check finding matches.
	Both        map[string]int `json:"both"`
	OnlyCheck   map[string]int `json:"onlyCheck"`
	OnlyAnalyze map[string]int `json:"onlyAnalyze"`
}

// sameCause is an analyze message and a check diagnostic that report the same cause, on the
// same object: the only pairs the comparison counts as found by both.
type sameCause struct {
	code string
	// message matches analyze's message.
	message *regexp.Regexp
	id      diag.ID
	// reports says whether a check finding with id is the cause of the analyze message m.
	reports func(f explain.Finding, m analyzeMessage) bool
}

// sameCauses are the causes both tools report.
var sameCauses = []sameCause{
	// A route to a subset no DestinationRule of the host defines. check's D10 is the wider:
	// a subset the rule the client uses does not define, wherever else it is defined.
	{code: ist0101, message: subsetNotFoundRE, id: diag.RouteToUndefinedSubset, reports: func(f explain.Finding, m analyzeMessage) bool {
		ref, ok := subsetRef(m)
		return ok && reportsSubsetRef(f, ref)
	}},
	// Locality failover without outlierDetection: analyze's schema warning (IST0133, from
	// Istio's pkg/config/validation/agent/validation.go ValidateLocalityLbSetting), check's D24
	// on the same DestinationRule.
	{code: "IST0133", message: regexp.MustCompile(`outlier detection policy must be provided for failover`), id: diag.OutlierDetectionSurprise,
		reports: func(f explain.Finding, m analyzeMessage) bool {
			return f.Resource != nil && "DestinationRule "+f.Resource.Namespace+"/"+f.Resource.Name == m.Origin &&
				strings.Contains(f.Message, "locality failover")
		}},
}

// compareAnalyze compares a check report (-o json) with istioctl analyze's messages (-o json).
func compareAnalyze(checkJSON, analyzeJSON []byte) (*AnalyzeComparison, error) {
	var rep explain.CheckReport
	if err := json.Unmarshal(checkJSON, &rep); err != nil {
		return nil, fmt.Errorf("reading the check report: %w", err)
	}
	var msgs []analyzeMessage
	if doc, ok := analyzeDocument(analyzeJSON); ok {
		if err := json.Unmarshal(doc, &msgs); err != nil {
			return nil, fmt.Errorf("reading istioctl analyze's messages: %w", err)
		}
	}
	c := &AnalyzeComparison{CheckIDs: map[string]int{}, AnalyzeCodes: map[string]int{}, Both: map[string]int{}, OnlyCheck: map[string]int{},
		OnlyAnalyze: map[string]int{}, SubsetRefs: []SubsetRef{}, Missing: []SubsetRef{}}
	matched := make([]bool, len(rep.Findings))
	for _, f := range rep.Findings {
		c.CheckIDs[f.ID]++
	}
	for _, m := range msgs {
		c.AnalyzeCodes[m.Code]++
		found := false
		for _, sc := range sameCauses {
			if m.Code != sc.code || !sc.message.MatchString(m.Message) {
				continue
			}
			for i, f := range rep.Findings {
				if f.ID == string(sc.id) && sc.reports(f, m) {
					matched[i], found = true, true
				}
			}
			if found {
				c.Both[string(sc.id)+" = "+sc.code]++
			}
		}
		if ref, ok := subsetRef(m); ok {
			c.SubsetRefs = append(c.SubsetRefs, ref)
			if !found {
				c.Missing = append(c.Missing, ref)
			}
		}
		if !found {
			c.OnlyAnalyze[m.Code]++
		}
	}
	for i, f := range rep.Findings {
		if !matched[i] {
			c.OnlyCheck[f.ID]++
		}
	}
	return c, nil
}

// analyzeDocument is the JSON array of istioctl analyze -o json's standard output: its log
// lines (a document it skips) come before it on the same stream, and it prints a notice instead
// when it finds nothing in some versions.
func analyzeDocument(out []byte) ([]byte, bool) {
	s := string(out)
	if !strings.HasPrefix(s, "[") {
		i := strings.Index(s, "\n[")
		if i < 0 {
			return nil, false
		}
		s = s[i+1:]
	}
	return []byte(s), true
}

// subsetRef reads an IST0101 for an undefined subset.
func subsetRef(m analyzeMessage) (SubsetRef, bool) {
	if m.Code != ist0101 {
		return SubsetRef{}, false
	}
	vs, ok := strings.CutPrefix(m.Origin, "VirtualService ")
	if !ok {
		return SubsetRef{}, false
	}
	sm := subsetNotFoundRE.FindStringSubmatch(m.Message)
	if sm == nil {
		return SubsetRef{}, false
	}
	// analyze spells objects NAME.NS in some versions and NS/NAME in others.
	if !strings.Contains(vs, "/") {
		if name, ns, ok := strings.Cut(vs, "."); ok {
			vs = ns + "/" + name
		}
	}
	return SubsetRef{VirtualService: vs, Host: sm[1], Subset: sm[2]}, true
}

// reportsSubsetRef reports whether a check finding is diag.RouteToUndefinedSubset for ref: on
// the same VirtualService, to the same subset, of a host whose first label is the route's.
func reportsSubsetRef(f explain.Finding, ref SubsetRef) bool {
	if f.ID != string(diag.RouteToUndefinedSubset) || f.Resource == nil || f.Resource.Kind != "VirtualService" ||
		f.Resource.Namespace+"/"+f.Resource.Name != ref.VirtualService ||
		!strings.Contains(f.Message, fmt.Sprintf("subset %q", ref.Subset)) {
		return false
	}
	label, _, _ := strings.Cut(ref.Host, ".")
	return slices.ContainsFunc(f.Hosts, func(h string) bool { return strings.HasPrefix(h, label+".") || h == label })
}

// countsText spells counts by key: `D9 ×3, D10`, sorted as the catalogue sorts IDs, "–" when
// there are none.
func countsText(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k, n := range m {
		if n > 0 {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return "–"
	}
	slices.SortFunc(keys, diag.CompareIDs)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		if m[k] > 1 {
			parts = append(parts, fmt.Sprintf("%s ×%d", k, m[k]))
		} else {
			parts = append(parts, k)
		}
	}
	return strings.Join(parts, ", ")
}

// compareRow is what check and istioctl analyze found on one input, and their times.
type compareRow struct {
	name                     string
	cmp                      *AnalyzeComparison
	checkWall, analyzeWall   time.Duration
	checkError, analyzeError string
}

// compareAnalyzeCmd runs `meshgen compare-analyze --plugin BIN --istioctl BIN [--mesh NAME=DIR]
// DIR...`: check and istioctl analyze on the YAML files of each scenario DIR (and on the mesh
// directory, recursively), and prints what each finds as Markdown.
func compareAnalyzeCmd(args []string) error {
	fs := flag.NewFlagSet("compare-analyze", flag.ContinueOnError)
	plugin := fs.String("plugin", "bin/kubectl-mesh_explain", "the plugin binary")
	istioctl := fs.String("istioctl", "", "istioctl binary (hack/istioctl.sh) (required)")
	var meshes stringList
	fs.Var(&meshes, "mesh", "`NAME=DIR`: a generated mesh (meshgen files) to compare on as a whole, recursively (repeatable)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *istioctl == "" {
		return fmt.Errorf("--istioctl is required")
	}
	var rows []compareRow
	for _, dir := range fs.Args() {
		files, err := yamlFiles(dir)
		if err != nil {
			return err
		}
		if len(files) == 0 {
			continue
		}
		var fargs []string
		for _, f := range files {
			fargs = append(fargs, "-f", f)
		}
		row, err := compareOn(*plugin, *istioctl, dir, fargs, files)
		if err != nil {
			return err
		}
		rows = append(rows, row)
		fmt.Fprintf(os.Stderr, "meshgen: %s: check %v, analyze %v\n", dir, row.checkWall.Round(time.Millisecond), row.analyzeWall.Round(time.Millisecond))
	}
	var meshRows []compareRow
	for _, m := range meshes {
		name, dir, ok := strings.Cut(m, "=")
		if !ok {
			return fmt.Errorf("--mesh %q: want NAME=DIR", m)
		}
		row, err := compareOn(*plugin, *istioctl, name, []string{"-f", dir, "-R"}, []string{dir})
		if err != nil {
			return err
		}
		meshRows = append(meshRows, row)
	}
	writeComparison(os.Stdout, rows, meshRows)
	return nil
}

// yamlFiles are the .yaml and .yml input files of dir (not below it), sorted.
func yamlFiles(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		// want.* files are what the scenario tests expect, not input.
		if !e.IsDir() && !strings.HasPrefix(e.Name(), "want.") && (strings.HasSuffix(e.Name(), ".yaml") || strings.HasSuffix(e.Name(), ".yml")) {
			out = append(out, filepath.Join(dir, e.Name()))
		}
	}
	return out, nil
}

// compareOn runs check (with checkFiles, its -f flags) and istioctl analyze (on analyzePaths)
// once each. A run that fails (check's malformed-input exit, say) is recorded in the row.
func compareOn(plugin, istioctl, name string, checkFiles, analyzePaths []string) (compareRow, error) {
	row := compareRow{name: name}
	// 3: check answered but could not use every object (a scenario of malformed input).
	exits := []int{1, 3, exitFindings, 64, 65}
	cs, checkOut, cerr := run(child{argv: concat([]string{plugin, "check", "-o", "json", "--fail-on", "never"}, checkFiles), capture: true, okExit: exits})
	as, analyzeOut, aerr := run(child{argv: concat(analyzeArgv(istioctl, analyzePaths...), []string{"-o", "json"}), capture: true, okExit: exits})
	if cerr != nil {
		return row, cerr
	}
	if aerr != nil {
		return row, aerr
	}
	row.checkWall, row.analyzeWall = time.Duration(cs.WallNanos), time.Duration(as.WallNanos)
	if !json.Valid(checkOut) {
		row.checkError = "no report (malformed input)"
		checkOut = []byte(`{"findings":[]}`)
	}
	if _, ok := analyzeDocument(analyzeOut); !ok {
		row.analyzeError = "no report"
	}
	c, err := compareAnalyze(checkOut, analyzeOut)
	if err != nil {
		return row, fmt.Errorf("%s: %w", name, err)
	}
	row.cmp = c
	return row, nil
}

// writeComparison prints the summary and the table of every row.
func writeComparison(w io.Writer, rows, meshRows []compareRow) {
	var checkAny, analyzeAny, bothAny, refs, found, onlyCheck, onlyAnalyze int
	var checkTime, analyzeTime time.Duration
	for _, r := range rows {
		if len(r.cmp.CheckIDs) > 0 {
			checkAny++
		}
		if len(r.cmp.AnalyzeCodes) > 0 {
			analyzeAny++
		}
		if len(r.cmp.Both) > 0 {
			bothAny++
		}
		refs += len(r.cmp.SubsetRefs)
		found += len(r.cmp.SubsetRefs) - len(r.cmp.Missing)
		if len(r.cmp.OnlyCheck) > 0 {
			onlyCheck++
		}
		if len(r.cmp.OnlyAnalyze) > 0 {
			onlyAnalyze++
		}
		checkTime += r.checkWall
		analyzeTime += r.analyzeWall
	}
	fmt.Fprintf(w, "| Scenario folders | %d |\n|---|---|\n", len(rows))
	fmt.Fprintf(w, "| with a finding of `check` | %d |\n", checkAny)
	fmt.Fprintf(w, "| with a message of `istioctl analyze` | %d |\n", analyzeAny)
	fmt.Fprintf(w, "| with a cause both report | %d |\n", bothAny)
	fmt.Fprintf(w, "| with a finding only `check` reports | %d |\n", onlyCheck)
	fmt.Fprintf(w, "| with a message only `istioctl analyze` reports | %d |\n", onlyAnalyze)
	fmt.Fprintf(w, "| routes to an undefined subset (IST0101) that `check` reports as D10 | %d of %d |\n", found, refs)
	fmt.Fprintf(w, "| time, all folders (one process per folder and tool) | `check` %s, `istioctl analyze` %s |\n\n",
		fmtDur(float64(checkTime)), fmtDur(float64(analyzeTime)))
	if len(meshRows) > 0 {
		fmt.Fprintln(w, "| Generated mesh | Both | Only `check` | Only `istioctl analyze` | `check` | `istioctl analyze` |")
		fmt.Fprintln(w, "|---|---|---|---|---|---|")
		for _, r := range meshRows {
			writeRow(w, r)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w, "| Folder | Both | Only `check` | Only `istioctl analyze` | `check` | `istioctl analyze` |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|")
	for _, r := range rows {
		writeRow(w, r)
	}
}

func writeRow(w io.Writer, r compareRow) {
	both := countsText(r.cmp.Both)
	onlyCheck, onlyAnalyze := countsText(r.cmp.OnlyCheck), countsText(r.cmp.OnlyAnalyze)
	if r.checkError != "" {
		onlyCheck = r.checkError
	}
	if r.analyzeError != "" {
		onlyAnalyze = r.analyzeError
	}
	fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s |\n", r.name, both, onlyCheck, onlyAnalyze,
		fmtDur(float64(r.checkWall)), fmtDur(float64(r.analyzeWall)))
}
