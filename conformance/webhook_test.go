package conformance

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	networking "istio.io/api/networking/v1alpha3"
	security "istio.io/api/security/v1beta1"
	"istio.io/istio/pkg/config"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/mesh-explain/kubectl-mesh-explain/conformance/istiorun"
	"github.com/mesh-explain/kubectl-mesh-explain/internal/testkit"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/cli"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/webhook"
)

// ours runs the project's reproduction of Istio's validation on cfg; ok is false for a kind it
// does not check.
func ours(cfg config.Config) (ps []webhook.Problem, ok bool) {
	m := webhook.Meta{Name: cfg.Name, Namespace: cfg.Namespace, Annotations: cfg.Annotations, Labels: cfg.Labels}
	switch spec := cfg.Spec.(type) {
	case *networking.DestinationRule:
		return webhook.DestinationRule(m, spec), true
	case *security.AuthorizationPolicy:
		return webhook.AuthorizationPolicy(m, spec), true
	case *security.PeerAuthentication:
		return webhook.PeerAuthentication(m, spec), true
	case *networking.ServiceEntry:
		return webhook.ServiceEntry(m, spec), true
	case *networking.WorkloadEntry:
		return webhook.WorkloadEntry(m, spec), true
	case *networking.VirtualService:
		return webhook.VirtualService(m, spec), true
	case *networking.Sidecar:
		return webhook.Sidecar(m, spec), true
	case *security.RequestAuthentication:
		return webhook.RequestAuthentication(m, spec), true
	case *networking.EnvoyFilter:
		return webhook.EnvoyFilter(m, spec), true
	}
	return nil, false
}

// TestWebhookAgreesWithIstio runs Istio's validation (the admission webhook's functions) and the
// project's pkg/webhook on every DestinationRule, AuthorizationPolicy and PeerAuthentication of
// every scenario folder, and requires the same errors, word for word, each on a field that
// exists in the object. On the bad-input folders it also runs the CLI and requires each of
// Istio's errors in a diagnostic (D33, A25 or S18) of the answer.
func TestWebhookAgreesWithIstio(t *testing.T) {
	rejected, objects, rejectedObjects := 0, 0, 0
	for _, sd := range listScenarios(t) {
		t.Run(sd.ID(), func(t *testing.T) {
			sc, err := istiorun.LoadScenarioKeepingInvalid(sd.Dir)
			if err != nil {
				if reason, ok := excluded[sd.ID()]; ok {
					t.Logf("Istio cannot load it (%v); excluded from conformance: %s", err, reason)
					return
				}
				t.Fatal(err)
			}
			var istioAll []string
			for _, cfg := range sc.Configs {
				ps, ok := ours(cfg)
				if !ok {
					continue
				}
				want, err := istiorun.ValidationErrors(cfg)
				if err != nil {
					t.Fatal(err)
				}
				objects++
				if len(want) > 0 {
					rejectedObjects++
				}
				compareErrors(t, cfg, ps, want)
				istioAll = append(istioAll, want...)
			}
			rejected += len(istioAll)
			if !istiorun.BadInput(sd.Dir) || len(istioAll) == 0 {
				return
			}
			msgs, err := answerDiagnostics(sd.Dir, sc.Command)
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range istioAll {
				quoted := strconv.Quote(w)
				if !slices.ContainsFunc(msgs, func(m string) bool { return strings.Contains(m, quoted) }) {
					t.Errorf("no D33, A25 or S18 diagnostic of `%s` quotes Istio's error %s; the diagnostics are:\n  %s", sc.Command, quoted, strings.Join(msgs, "\n  "))
				}
			}
		})
	}
	t.Logf("%d objects validated, %d of them rejected with %d errors, all matched", objects, rejectedObjects, rejected)
}

// TestWebhookCasesAgreeWithIstio runs Istio's validation and pkg/webhook on the case files of
// pkg/webhook/testdata/cases (one object per rule, each rejected) and requires the same errors,
// word for word, each on a field that exists in the object.
func TestWebhookCasesAgreeWithIstio(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "pkg", "webhook", "testdata", "cases", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no case files (%v)", err)
	}
	sc, err := istiorun.LoadObjects(files...)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, cfg := range sc.Configs {
		ps, ok := ours(cfg)
		if !ok {
			t.Errorf("%s %s/%s: pkg/webhook does not check the kind", cfg.GroupVersionKind.Kind, cfg.Namespace, cfg.Name)
			continue
		}
		want, err := istiorun.ValidationErrors(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if len(want) == 0 {
			t.Errorf("%s %s/%s: Istio's validation accepts it; a case object must be rejected", cfg.GroupVersionKind.Kind, cfg.Namespace, cfg.Name)
		}
		compareErrors(t, cfg, ps, want)
		n++
	}
	t.Logf("%d case objects compared", n)
}

// answerDiagnostics runs the CLI with -o json on a folder and returns the messages of its
// validation diagnostics (D33, A25, S18).
func answerDiagnostics(dir, command string) ([]string, error) {
	args := append(strings.Fields(command), "-f", dir, "-o", "json")
	var out, errOut bytes.Buffer
	if code := cli.Main(args, genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}); code != cli.ExitOK {
		return nil, fmt.Errorf("kubectl mesh-explain %s exited %d: %s", strings.Join(args, " "), code, errOut.String())
	}
	msgs, err := testkit.DiagnosticMessages(out.Bytes(), "D33", "A25", "S18")
	if err != nil {
		return nil, err
	}
	return msgs, nil
}

// fieldExists checks that path (`spec.a.b[2].c`, `spec.m[key]` for a map, or
// `metadata.annotations[key]`) names a value of the object written as JSON, or, for the last segment, a field missing from an object that exists.
// compareErrors requires pkg/webhook's problems ps with cfg to be Istio's validation errors
// want, in any order, each reported on a field cfg has.
func compareErrors(t *testing.T, cfg config.Config, ps []webhook.Problem, want []string) {
	t.Helper()
	var got []string
	for _, p := range ps {
		got = append(got, p.Webhook)
		if err := fieldExists(cfg, p.Field); err != nil {
			t.Errorf("%s %s/%s: %q is reported on %s: %v", cfg.GroupVersionKind.Kind, cfg.Namespace, cfg.Name, p.Webhook, p.Field, err)
		}
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("%s %s/%s:\n Istio's validation: %q\n pkg/webhook:        %q", cfg.GroupVersionKind.Kind, cfg.Namespace, cfg.Name, want, got)
	}
}

func fieldExists(cfg config.Config, path string) error {
	var v any
	rest, ok := strings.CutPrefix(path, "spec")
	if ok {
		js, err := json.Marshal(cfg.Spec)
		if err != nil {
			return err
		}
		if err := json.Unmarshal(js, &v); err != nil {
			return err
		}
	} else if rest, ok = strings.CutPrefix(path, "metadata.annotations"); ok {
		a := map[string]any{}
		for k, x := range cfg.Annotations {
			a[k] = x
		}
		v = a
	} else {
		return fmt.Errorf("neither spec nor metadata.annotations")
	}
	for rest != "" {
		var seg string
		switch rest[0] {
		case '.':
			rest = rest[1:]
			i := strings.IndexAny(rest, ".[")
			if i < 0 {
				i = len(rest)
			}
			seg, rest = rest[:i], rest[i:]
		case '[':
			i := strings.IndexByte(rest, ']')
			if i < 0 {
				return fmt.Errorf("unclosed [")
			}
			seg, rest = rest[1:i], rest[i+1:]
		default:
			return fmt.Errorf("unexpected %q", rest)
		}
		switch x := v.(type) {
		case map[string]any:
			c, ok := x[seg]
			if !ok && rest == "" {
				return nil // a required field that is missing: its parent exists
			}
			if !ok {
				return fmt.Errorf("no %q", seg)
			}
			v = c
		case []any:
			n, err := strconv.Atoi(seg)
			if err != nil || n < 0 || n >= len(x) {
				return fmt.Errorf("no element %s", seg)
			}
			v = x[n]
		default:
			return fmt.Errorf("%q below a value", seg)
		}
	}
	return nil
}
