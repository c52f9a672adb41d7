package ztunnelauthz

import (
	"fmt"
	"io"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/explain"
)

// ZtunnelKey is one entry of a workload's authorization_policies list, as istiod pushes it.
type ZtunnelKey struct {
	// Key is `<namespace>/<name>`.
	Key string
	// Missing is true for a dangling key: istiod lists it but pushes no such policy.
	Missing bool
	// YAML is the policy as Istio's protomarshal.ToYAML prints it; nil when Missing.
	YAML []byte
}

// ZtunnelKeys returns the workload's key list from an authz Result, in istiod's order. Policies
// that apply by scope (GLOBAL, NAMESPACE) are not in the list and are left out.
func ZtunnelKeys(res *explain.Result) ([]ZtunnelKey, error) {
	var out []ZtunnelKey
	for _, o := range res.Objects {
		if o.Kind != ObjectKind || !isListed(o) {
			continue
		}
		k := ZtunnelKey{Key: o.Name, Missing: o.Missing}
		if !o.Missing {
			if len(o.Value) == 0 {
				return nil, fmt.Errorf("policy %s has no value to print", o.Name)
			}
			y, err := yaml.JSONToYAML(o.Value)
			if err != nil {
				return nil, fmt.Errorf("printing policy %s: %w", o.Name, err)
			}
			k.YAML = y
		}
		out = append(out, k)
	}
	return out, nil
}

func isListed(o explain.Object) bool {
	for _, s := range o.Summary {
		if s.Name == SummaryAttachment {
			return strings.HasPrefix(s.Value, AttachmentListedPrefix)
		}
	}
	return false
}

// WriteZtunnel prints `-o ztunnel`: one YAML document per key of the workload's list, in
// istiod's order, separated by `---` lines; a dangling key is the comment `# missing: NS/NAME`.
// An empty list prints nothing.
func WriteZtunnel(w io.Writer, res *explain.Result) error {
	return WriteZtunnelResults(w, []*explain.Result{res})
}

// WriteZtunnelResults prints `-o ztunnel` for several workloads (deployment/NAME, -l): the
// documents of every workload in turn, all separated by `---` lines.
func WriteZtunnelResults(w io.Writer, results []*explain.Result) error {
	var docs []string
	for _, res := range results {
		keys, err := ZtunnelKeys(res)
		if err != nil {
			return err
		}
		for _, k := range keys {
			if k.Missing {
				docs = append(docs, "# missing: "+k.Key+"\n")
				continue
			}
			docs = append(docs, string(k.YAML))
		}
	}
	_, err := io.WriteString(w, strings.Join(docs, "---\n"))
	return err
}
