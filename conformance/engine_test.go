package conformance

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/mesh-explain/kubectl-mesh-explain/conformance/istiorun"
	gen "github.com/mesh-explain/kubectl-mesh-explain/internal/testkit/scenariogen"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/cli"
)

var (
	countGenerated = flag.Int("count-generated", 1000, "how many generated scenarios of each kind to compare")
	generatedKinds = flag.String("kinds", "cluster,authz,sidecar,waypoint", "the kinds of generated scenarios to run, comma-separated")
	istioOnly      = flag.Bool("istio-only", false, "run only Istio on the generated scenarios (twice each, checking that its answers agree), not the engine")
	firstSeed      = flag.Uint64("seed", 1, "seed of the first generated scenario (0: one derived from the clock, printed)")
	keepDir        = flag.String("keep", "", "directory for the shrunk scenarios that differ (default: a new directory under $TMPDIR)")
	shrinkBudget   = flag.Int("shrink-budget", 400, "how many runs shrinking one differing scenario may take")
	maxReported    = flag.Int("max-reported", 5, "how many differing generated scenarios of each kind to shrink and report in detail")
)

// outputFormat is the -o value of a scenario kind: ztunnel for ambient authz, envoy for
// cluster, sidecar and waypoint.
func outputFormat(kind string) string {
	if kind == "authz" {
		return "ztunnel"
	}
	return "envoy"
}

// runEngine runs the project's CLI in process on a scenario folder, as `kubectl mesh-explain
// <command> -f DIR -o envoy|ztunnel`, and returns its output, or an error with its stderr.
func runEngine(dir, command, kind string) ([]byte, error) {
	args := append(strings.Fields(command), "-f", dir, "-o", outputFormat(kind))
	var out, errOut bytes.Buffer
	code := cli.Main(args, genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
	if code != cli.ExitOK {
		return nil, fmt.Errorf("kubectl mesh-explain %s exited %d: %s", strings.Join(args, " "), code, strings.TrimSpace(errOut.String()))
	}
	return out.Bytes(), nil
}

// agreement runs Istio and the engine on a folder and returns the differences ("" entries
// never appear; an engine failure is one difference).
func agreement(dir, kind string) (diffs []string, err error) {
	sc, err := istiorun.LoadScenario(dir)
	if err != nil {
		return nil, err
	}
	want, _, err := istiorun.RunKind(sc, kind)
	if err != nil {
		return nil, fmt.Errorf("istio: %w", err)
	}
	got, engErr := runEngine(dir, sc.Command, kind)
	if engErr != nil {
		return []string{engErr.Error()}, nil
	}
	return compareOutput(kind, got, want)
}

// TestEngineAgreesWithIstio runs the project's engines (through the CLI, in process) on every
// scenario folder and on generated scenarios, and compares their output with Istio's.
func TestEngineAgreesWithIstio(t *testing.T) {
	t.Run("scenarios", func(t *testing.T) {
		for _, sd := range listScenarios(t) {
			t.Run(sd.ID(), func(t *testing.T) {
				if reason, ok := excluded[sd.ID()]; ok {
					t.Logf("excluded from conformance: %s", reason)
					return
				}
				diffs, err := agreement(sd.Dir, sd.Kind)
				if err != nil {
					t.Fatal(err)
				}
				if len(diffs) > 0 {
					t.Errorf("the engine differs from Istio on %s:\n  %s", sd.Dir, strings.Join(diffs, "\n  "))
				}
			})
		}
	})
	seed := *firstSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	for _, kind := range strings.Split(*generatedKinds, ",") {
		t.Run("generated/"+kind, func(t *testing.T) {
			t.Logf("seeds %d..%d", seed, seed+uint64(*countGenerated)-1)
			if *istioOnly {
				runGeneratedIstio(t, kind, seed, *countGenerated)
				return
			}
			runGenerated(t, kind, seed, *countGenerated)
		})
	}
}

func runGenerated(t *testing.T, kind string, seed uint64, n int) {
	work := t.TempDir()
	var compared, dropped, differing, knownPanics int
	for i := 0; i < n; i++ {
		s := gen.Generate(kind, seed+uint64(i))
		dir := filepath.Join(work, fmt.Sprint(s.Seed))
		if err := s.Write(dir); err != nil {
			t.Fatal(err)
		}
		diffs, err := agreement(dir, kind)
		var invalid *istiorun.InvalidError
		switch {
		case errors.As(err, &invalid):
			dropped++
			continue
		case isKnownIstioPanic(err):
			knownPanics++
			t.Logf("seed %d: not compared, Istio panics on it (a known Istio bug, see TestKnownIstioPanics)", s.Seed)
			continue
		case err != nil:
			t.Errorf("seed %d: the generator made a scenario Istio cannot run: %v\n(scenario in %s)", s.Seed, err, keep(t, s))
			continue
		}
		compared++
		if len(diffs) == 0 {
			continue
		}
		if again, err := agreement(dir, kind); err == nil && !slices.Equal(again, diffs) {
			t.Errorf("seed %d (%s): two runs disagree with each other (Istio or the engine is not deterministic here):\n  first:  %s\n  second: %s\n(scenario in %s)",
				s.Seed, kind, strings.Join(diffs, "\n          "), strings.Join(again, "\n          "), keep(t, s))
			continue
		}
		differing++
		if differing > *maxReported {
			t.Errorf("seed %d (%s): the engine differs from Istio: %s", s.Seed, kind, diffs[0])
			continue
		}
		sig := signature(diffs)
		small := gen.Shrink(s, func(c *gen.Scenario) bool {
			d := filepath.Join(work, "shrink")
			_ = os.RemoveAll(d)
			if c.Write(d) != nil {
				return false
			}
			ds, err := agreement(d, kind)
			return err == nil && len(ds) > 0 && signature(ds) == sig
		}, *shrinkBudget)
		smallDir := keep(t, small)
		smallDiffs, _ := agreement(smallDir, kind)
		t.Errorf("seed %d (%s): the engine differs from Istio:\n  %s\nshrunk to %d documents in %s, where it differs at:\n  %s\nrerun: go test -run 'TestEngineAgreesWithIstio/generated/%s' -seed %d -count-generated 1",
			s.Seed, kind, strings.Join(diffs, "\n  "), len(small.Docs), smallDir, strings.Join(smallDiffs, "\n  "), kind, s.Seed)
	}
	t.Logf("%s: %d generated, %d dropped as invalid by Istio's validation, %d not compared because Istio panics, %d compared, %d differ",
		kind, n, dropped, knownPanics, compared, differing)
	if n > 0 && compared < n/2 {
		t.Errorf("only %d of %d generated %s scenarios passed Istio's validation; the generator needs fixing", compared, n, kind)
	}
}

var arrayLabel = regexp.MustCompile(`\[\d+\](\([^)]*\))?`)

// signature is what shrinking must preserve: the first differing path (array positions and
// element names left out, since removing objects renumbers them), or the engine's failure.
func signature(diffs []string) string {
	if len(diffs) == 0 {
		return ""
	}
	if strings.HasPrefix(diffs[0], "kubectl mesh-explain ") {
		// The message without the command line (which names the folder).
		_, msg, _ := strings.Cut(diffs[0], "error: ")
		return "engine failed: " + msg
	}
	path, _, _ := strings.Cut(diffs[0], ": ")
	return arrayLabel.ReplaceAllString(path, "[]")
}

// keep writes a scenario where it survives the test and returns the folder.
func keep(t *testing.T, s *gen.Scenario) string {
	root := *keepDir
	if root == "" {
		root = filepath.Join(os.TempDir(), "mesh-explain-conformance")
	}
	dir := filepath.Join(root, fmt.Sprintf("%s-%d", s.Kind, s.Seed))
	_ = os.RemoveAll(dir)
	if err := s.Write(dir); err != nil {
		t.Fatal(err)
	}
	return dir
}

// runGeneratedIstio runs only Istio on generated scenarios, twice each, and checks that the
// harness can run every valid one and that the two answers agree once put in canonical form
// (for sidecar scenarios, compare.CanonicalInbound). It counts how often the raw answers
// differ, which for sidecar scenarios is the order of the per-port passthrough chains.
func runGeneratedIstio(t *testing.T, kind string, seed uint64, n int) {
	work := t.TempDir()
	var ran, dropped, knownPanics, rawDiffer int
	for i := 0; i < n; i++ {
		s := gen.Generate(kind, seed+uint64(i))
		dir := filepath.Join(work, fmt.Sprint(s.Seed))
		if err := s.Write(dir); err != nil {
			t.Fatal(err)
		}
		sc, err := istiorun.LoadScenario(dir)
		var invalid *istiorun.InvalidError
		if errors.As(err, &invalid) {
			dropped++
			continue
		}
		if err != nil {
			t.Errorf("seed %d: %v\n(scenario in %s)", s.Seed, err, keep(t, s))
			continue
		}
		run := func() ([]byte, error) {
			if kind == "sidecar" {
				return istiorun.RunInboundAsSent(sc)
			}
			out, _, err := istiorun.RunKind(sc, kind)
			return out, err
		}
		first, err := run()
		switch {
		case isKnownIstioPanic(err):
			knownPanics++
			continue
		case err != nil:
			t.Errorf("seed %d: the generator made a scenario Istio cannot run: %v\n(scenario in %s)", s.Seed, err, keep(t, s))
			continue
		}
		second, err := run()
		if err != nil {
			t.Errorf("seed %d: the second run failed: %v\n(scenario in %s)", s.Seed, err, keep(t, s))
			continue
		}
		ran++
		if !bytes.Equal(first, second) {
			rawDiffer++
		}
		if diffs, err := compareOutput(kind, first, second); err != nil || len(diffs) > 0 {
			t.Errorf("seed %d (%s): two runs of Istio disagree (%v):\n  %s\n(scenario in %s)",
				s.Seed, kind, err, strings.Join(diffs, "\n  "), keep(t, s))
		}
		if (i+1)%50 == 0 {
			t.Logf("%s: after %d generated (seed %d): %d dropped as invalid, %d not run because Istio panics, %d run twice, %d with two different raw answers",
				kind, i+1, s.Seed, dropped, knownPanics, ran, rawDiffer)
		}
	}
	t.Logf("%s: %d generated, %d dropped as invalid by Istio's validation, %d not run because Istio panics, %d run twice, %d with two different raw answers",
		kind, n, dropped, knownPanics, ran, rawDiffer)
	if n > 0 && ran < n/2 {
		t.Errorf("only %d of %d generated %s scenarios passed Istio's validation; the generator needs fixing", ran, n, kind)
	}
}
