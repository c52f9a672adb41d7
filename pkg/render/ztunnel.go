package render

import (
	"fmt"
	"io"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/explain"
)

// ztunnelPrinter prints what ztunnel is sent for each workload: one YAML document per
// Listed object (a key of the workload's authorization_policies list), in order, separated by
// `---` lines. The YAML is the object's Value as Istio's protomarshal.ToYAML prints it (keys
// sorted); a Missing object (a key istiod lists but pushes no policy for) is the comment
// `# missing: NS/NAME`. A workload with an empty list prints nothing, and several workloads
// (deployment/NAME, -l) are one stream: the form the conformance runner produces from
// Istio's output for a multi-pod query.
type ztunnelPrinter struct{}

func (ztunnelPrinter) Print(w io.Writer, r *explain.Result) error {
	return ztunnelPrinter{}.PrintList(w, []*explain.Result{r})
}

func (ztunnelPrinter) PrintList(w io.Writer, rs []*explain.Result) error {
	var docs []string
	for _, r := range rs {
		if r == nil {
			continue
		}
		for _, o := range r.Objects {
			if !o.Listed {
				continue
			}
			if o.Missing {
				docs = append(docs, "# missing: "+o.Name+"\n")
				continue
			}
			if len(o.Value) == 0 {
				return fmt.Errorf("policy %s has no value to print", o.Name)
			}
			y, err := yaml.JSONToYAML(o.Value)
			if err != nil {
				return fmt.Errorf("printing policy %s: %w", o.Name, err)
			}
			docs = append(docs, string(y))
		}
	}
	_, err := io.WriteString(w, strings.Join(docs, "---\n"))
	return err
}
