package webhook

import (
	"fmt"
	"strconv"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/explain"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/explain/diag"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/provenance"
)

// Problem is one error Istio's validation returns for an object.
type Problem struct {
	// Field is the path of the value in the object, as `spec.trafficPolicy.connectionPool.tcp.maxConnections`.
	Field string
	// Webhook is the error text of Istio's validation, exactly as it returns it.
	Webhook string
	// Istiod is what istiod does with the value when the object reaches it anyway.
	Istiod string
}

// Diagnostic reports p on the object ref as the engine's diagnostic id: the field, the webhook's
// words, and what istiod does.
func (p Problem) Diagnostic(id diag.ID, ref provenance.Ref) explain.Diagnostic {
	return id.New(
		fmt.Sprintf("%s: Istio's validation rejects %s (the admission webhook says %q); if it reaches istiod anyway (validation off, or applied from files), %s",
			p.Field, ref, p.Webhook, p.Istiod),
		fmt.Sprintf("fix %s in %s: the admission webhook rejects the object as written", p.Field, ref), ref)
}

// Diagnostics reports every problem of ps on ref as id.
func Diagnostics(id diag.ID, ref provenance.Ref, ps []Problem) []explain.Diagnostic {
	var out []explain.Diagnostic
	for _, p := range ps {
		out = append(out, p.Diagnostic(id, ref))
	}
	return out
}

// Meta is the metadata validation reads: the object's name, namespace, annotations, and labels
// (a ServiceEntry's istio.io/use-waypoint).
type Meta struct {
	Name, Namespace     string
	Annotations, Labels map[string]string
}

// dryRunAnnotation is the annotation that makes an AuthorizationPolicy dry-run.
const dryRunAnnotation = "istio.io/dry-run"

// dryRun is checkDryRunAnnotation, which Istio's validation runs before the kind's own checks
// and which ends validation when it fails: only an ALLOW or DENY AuthorizationPolicy may carry
// istio.io/dry-run, with a boolean value.
func dryRun(m Meta, authz bool, action string) []Problem {
	val, ok := m.Annotations[dryRunAnnotation]
	if !ok {
		return nil
	}
	field := "metadata.annotations[" + dryRunAnnotation + "]"
	if !authz {
		return []Problem{{Field: field, Webhook: fmt.Sprintf("%s/%s has unsupported annotation %s, please remove the annotation", m.Namespace, m.Name, dryRunAnnotation),
			Istiod: "istiod ignores the annotation on this kind"}}
	}
	switch action {
	case "ALLOW", "DENY":
		if _, err := strconv.ParseBool(val); err != nil {
			// builder.go isDryRun and ambient's convertAuthorizationPolicy log the error and
			// keep dryRun false.
			return []Problem{{Field: field, Webhook: fmt.Sprintf("%s/%s has annotation %s with invalid value (%s): %v", m.Namespace, m.Name, dryRunAnnotation, val, err),
				Istiod: "istiod cannot parse the value as a boolean and enforces the policy (not dry-run)"}}
		}
	default:
		return []Problem{{Field: field, Webhook: fmt.Sprintf("the annotation %s currently only supports action ALLOW/DENY, found action %v in %s/%s", dryRunAnnotation, action, m.Namespace, m.Name),
			Istiod: "istiod does not check it and reads the annotation as for ALLOW and DENY"}}
	}
	return nil
}

// internalAnnotation is what istiod does with an annotation reserved to objects Istio generates.
const internalAnnotation = "istiod reads the object with the annotation, which is meant for objects Istio generates itself (what it then does is not covered here)"

// checkMetadata is validateMetadata (pkg/config/validation/validation.go), which Istio runs
// before every kind's own checks and which ends validation at its first error: the dry-run
// annotation, then three annotations reserved to Istio itself
// (pkg/config/constants/constants.go AlwaysReject, InternalParentNamespace, InternalParentNames).
func checkMetadata(m Meta, authz bool, action string) []Problem {
	if ps := dryRun(m, authz, action); ps != nil {
		return ps
	}
	for _, a := range []struct{ name, msg, istiod string }{
		{"internal.istio.io/webhook-always-reject", "%q annotation found, rejecting", "istiod ignores the annotation (it only makes the webhook reject the object)"},
		{"internal.istio.io/parent-namespace", "%q annotation found, this may not be set by users", internalAnnotation},
		{"internal.istio.io/parents", "%q annotation found, this may not be set by users", internalAnnotation},
	} {
		if _, ok := m.Annotations[a.name]; ok {
			return []Problem{{Field: "metadata.annotations[" + a.name + "]", Webhook: fmt.Sprintf(a.msg, a.name), Istiod: a.istiod}}
		}
	}
	return nil
}

// metadataAndSelector is validateMetadata, then ValidateAlphaWorkloadSelector on sel: the
// checks Sidecars, ServiceEntries and EnvoyFilters start with, whose errors end validation.
func metadataAndSelector(m Meta, sel *networking.WorkloadSelector) []Problem {
	if ps := checkMetadata(m, false, ""); ps != nil {
		return ps
	}
	var l list
	for _, msg := range selectorErrors(sel.GetLabels()) {
		l.add("spec.workloadSelector.labels", msg, selectorMatchesNothing)
	}
	return l
}

// list collects problems.
type list []Problem

func (l *list) add(field, webhook, istiod string) {
	*l = append(*l, Problem{Field: field, Webhook: webhook, Istiod: istiod})
}

// duration is agent.ValidateDuration: at least 1ms, in whole milliseconds.
func duration(d *durationpb.Duration) string {
	v := d.AsDuration()
	if v < time.Millisecond {
		return "duration must be greater than 1ms"
	}
	if v%time.Millisecond != 0 {
		return "only durations to ms precision are supported"
	}
	return ""
}

// checkDuration adds the ValidateDuration error of d, if any.
func (l *list) checkDuration(field string, d *durationpb.Duration, istiod string) {
	if d == nil {
		return
	}
	if msg := duration(d); msg != "" {
		l.add(field, msg, istiod)
	}
}

// percent is ValidatePercent.
func percent(v int32) string {
	if v < 0 || v > 100 {
		return fmt.Sprintf("percentage %v is not in range 0..100", v)
	}
	return ""
}

// asWritten is what istiod does with most values it does not check itself.
const asWritten = "istiod does not check it and copies it into the Envoy configuration as written"
