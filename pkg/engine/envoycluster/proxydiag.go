package envoycluster

import "github.com/mesh-explain/kubectl-mesh-explain/pkg/explain"

// ProxyDiagnostics are the findings about the Explainer's proxy itself, which Explain adds to
// the answer of every host (D30: EnvoyFilters that patch its clusters).
func (e *Explainer) ProxyDiagnostics() []explain.Diagnostic { return e.envoyFilters }
