package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/yaml"

	"github.com/mesh-explain/kubectl-mesh-explain/internal/testkit/scenariogen"
)

// scenarioKinds are the generator's kinds of scenario, each with the -o formats its command
// takes besides the table.
var scenarioKinds = []struct {
	kind    string
	formats []string
}{
	{"cluster", []string{"envoy"}},
	{"authz", []string{"ztunnel"}},
	{"sidecar", []string{"envoy"}},
	{"waypoint", []string{"envoy"}},
}

// FuzzScenarioCommand runs the commands a user runs on generated scenarios that the fuzzer's
// bytes edit (scenariogen's Mutate): the scenario's own command (`cluster HOST`, `authz
// pod/NAME`, `authz waypoint/NAME`) or `check -A`, with the files on standard input (`-f -`)
// and an output format the fuzzer picks. Whatever the input, the command never ends in an
// internal error (exit 70: a recovered panic) nor in a usage error (the command line is
// valid, but for -o envoy or -o ztunnel on a pod the edits moved to the other data plane),
// and exits with a documented code; the table and stderr never carry a raw terminal control
// or bidirectional override (the edits put ESC, OSC and U+202E sequences into names and
// fields); a JSON or SARIF document parses as JSON, a YAML document as YAML.
//
//	go test -run '^$' -fuzz '^FuzzScenarioCommand$' -fuzztime 10m ./pkg/cli
func FuzzScenarioCommand(f *testing.F) {
	for i := range scenarioKinds {
		for format := range uint8(6) {
			f.Add(uint64(1+i), uint8(i), format, []byte{})
		}
		f.Add(uint64(40+i), uint8(i), uint8(2), []byte{2, 0, 2, 76})
		f.Add(uint64(80+i), uint8(i), uint8(0), []byte{2, 1, 30, 77, 5, 2, 9, 0, 40})
		f.Add(uint64(120+i), uint8(i), uint8(9), []byte{2, 3, 3, 78, 1, 3, 3, 7})
	}
	f.Fuzz(func(t *testing.T, seed uint64, k, format uint8, edits []byte) {
		sk := scenarioKinds[int(k)%len(scenarioKinds)]
		s := scenariogen.Generate(sk.kind, seed)
		s.Mutate(edits)
		in, err := s.JSON()
		if err != nil {
			t.Fatal(err)
		}
		args := strings.Fields(s.Command)
		formats := append([]string{"", "wide", "json", "yaml"}, sk.formats...)
		if format&8 != 0 {
			// The check of the whole mesh.
			args = []string{"check", "-A", "--fail-on", "never"}
			formats = []string{"", "wide", "json", "yaml", "sarif"}
		}
		o := formats[int(format&7)%len(formats)]
		if o != "" {
			args = append(args, "-o", o)
		}
		args = append(args, "-f", "-")
		t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "none"))
		var out, errOut bytes.Buffer
		code := run(args, genericiooptions.IOStreams{In: bytes.NewReader(in), Out: &out, ErrOut: &errOut}, NewRootCmd)
		fail := func(why string) {
			t.Helper()
			t.Fatalf("kubectl mesh-explain %s: %s\nstdout:\n%q\nstderr:\n%q\nstdin:\n%s", strings.Join(args, " "), why, out.String(), errOut.String(), in)
		}
		switch code {
		case ExitInternal:
			fail("internal error")
		case ExitUsage:
			// -o envoy and -o ztunnel fit one data plane: the edits may have turned the pod
			// into one of the other (a sidecar annotation dropped), which is a usage error.
			if o != "envoy" && o != "ztunnel" {
				fail("usage error on a valid command line")
			}
		case ExitOK, ExitError, ExitIncomplete, ExitData, ExitFindings:
		default:
			fail(fmt.Sprintf("undocumented exit code %d", code))
		}
		if c, ok := rawControl(errOut.String()); ok {
			fail("stderr carries the raw control " + c)
		}
		if code == ExitError || code == ExitData || code == ExitUsage {
			return
		}
		switch o {
		case "", "wide":
			if c, ok := rawControl(out.String()); ok {
				fail("the table carries the raw control " + c)
			}
		case "json", "sarif", "envoy":
			if !json.Valid(out.Bytes()) {
				fail("the document is not JSON")
			}
		case "yaml", "ztunnel":
			var v any
			if err := yaml.Unmarshal(out.Bytes(), &v); err != nil {
				fail("the document is not YAML: " + err.Error())
			}
		}
	})
}

// rawControl returns the first character of s that a terminal would act on rather than print,
// as U+NNNN: a C0 control other than newline and tab, DEL, a C1 control, or a bidirectional
// formatting character.
func rawControl(s string) (string, bool) {
	for _, r := range s {
		switch {
		case r == '\n', r == '\t':
		case r < 0x20, r >= 0x7f && r <= 0x9f,
			r == 0x061c, r == 0x200e, r == 0x200f, r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
			return fmt.Sprintf("%U", r), true
		}
	}
	return "", false
}
