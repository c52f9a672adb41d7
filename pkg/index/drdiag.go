package index

import (
	"fmt"
	"slices"
	"strings"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/explain"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/explain/diag"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/meshhost"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/provenance"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/webhook"
)

func refsOf(ds []*drInfo) []provenance.Ref {
	out := make([]provenance.Ref, 0, len(ds))
	for _, d := range ds {
		out = append(out, d.ref)
	}
	return out
}

func entryName(e *drEntry) string {
	if len(e.from) == 1 {
		return e.primary.ref.String()
	}
	names := make([]string, 0, len(e.from))
	for _, d := range e.from {
		names = append(names, d.ns+"/"+d.obj.Name)
	}
	return "DestinationRule " + strings.Join(names, " + ")
}

func entriesName(es []*drEntry) string {
	names := make([]string, 0, len(es))
	for _, e := range es {
		names = append(names, entryName(e))
	}
	return strings.Join(names, ", ")
}

func entryDRs(es []*drEntry) []*drInfo {
	var out []*drInfo
	for _, e := range es {
		for _, d := range e.from {
			if !slices.Contains(out, d) {
				out = append(out, d)
			}
		}
	}
	return out
}

func exportSetText(set map[string]bool) string {
	if len(set) == 0 {
		return "none"
	}
	return strings.Join(sortedKeys(set), ",")
}

// selectionDiagnostics explains the DestinationRules for the service's host that do not apply
// to the proxy (D2–D6, D13, D31), what merging dropped from the one that does (D11, D12), and
// the values of the rules it merges, and of the ServiceEntry behind the service, that Istio's
// validation rejects (D33).
// handled collects the rules a diagnostic already names, so whyNot does not name them again.
func (ix *Index) selectionDiagnostics(p *Proxy, svc *Service, list []*drEntry, step int, chosen *drEntry) []explain.Diagnostic {
	handled := map[*drInfo]bool{}
	var out []explain.Diagnostic
	switch {
	case chosen != nil:
		out = mergeDiagnostics(chosen)
		for _, d := range chosen.from {
			out = append(out, d.rejectedByValidation()...)
		}
		if chosen.primary.hasSelector {
			out = append(out, selectorNotInheriting(list, chosen, handled)...)
		} else {
			out = append(out, rulesNotMerged(list, chosen, handled)...)
		}
	case len(list) > 0:
		out = append(out, ix.selectorShadowsFallback(p, svc, list, handled))
	}
	out = append(out, ix.serviceEntryRejected(svc)...)
	for _, d := range ix.drsCovering(svc.Hostname) {
		if handled[d] || (chosen != nil && chosen.has(d)) {
			continue
		}
		if diag, ok := ix.whyNot(p, svc, d, list, step, chosen); ok {
			out = append(out, diag)
		}
	}
	diag.Sort(out, diag.KeepAll)
	return out
}

// mergeDiagnostics is what merging dropped from the chosen entry: subsets whose name an earlier
// rule already used (D11) and top-level policies of merged rules (D12).
func mergeDiagnostics(chosen *drEntry) []explain.Diagnostic {
	var out []explain.Diagnostic
	for _, ds := range chosen.dupSubsets {
		out = append(out, diag.DuplicateSubsetDropped.New(
			fmt.Sprintf("subset %q of %s is dropped: %s, merged before it, already defines a subset with that name", ds.name, ds.dropped.ref, ds.kept.ref),
			fmt.Sprintf("rename or remove subset %q in %s or %s", ds.name, ds.dropped.ref, ds.kept.ref),
			ds.dropped.ref, ds.kept.ref))
	}
	for _, d := range chosen.ignoredTP {
		used := chosen.primary
		if chosen.tpFrom != nil {
			used = chosen.tpFrom
		}
		out = append(out, diag.MergedTrafficPolicyIgnored.New(
			fmt.Sprintf("spec.trafficPolicy of %s is ignored: the rule is merged into %s, and istiod keeps the trafficPolicy of %s whole (top-level policies are never merged field by field)",
				d.ref, chosen.primary.ref, used.ref),
			fmt.Sprintf("move the settings of %s into spec.trafficPolicy of %s, or into subsets", d.ref, used.ref),
			d.ref, used.ref))
	}
	return out
}

// selectorNotInheriting (D31): the chosen rule has a workloadSelector, and a plain rule of the
// same namespace was not merged into it.
func selectorNotInheriting(list []*drEntry, chosen *drEntry, handled map[*drInfo]bool) []explain.Diagnostic {
	var out []explain.Diagnostic
	for _, e := range list {
		if e.primary.hasSelector {
			continue
		}
		for _, d := range e.from {
			if chosen.has(d) {
				continue
			}
			handled[d] = true
			out = append(out, diag.SelectorRuleDoesNotInherit.New(
				fmt.Sprintf("%s has a workloadSelector that matches this proxy and does not inherit %s (no workloadSelector, exportTo: %s): istiod merges a plain rule into workloadSelector rules only when its exportTo contains \".\", so this proxy gets none of its subsets or trafficPolicy",
					chosen.primary.ref, d.ref, d.exportToText()),
				fmt.Sprintf("add . to spec.exportTo of %s, or copy the subsets and trafficPolicy it needs into %s", d.ref, chosen.primary.ref),
				chosen.primary.ref, d.ref))
		}
	}
	return out
}

// rulesNotMerged (D13): selector-less entries of the same host that were kept apart from the
// chosen one because their exportTo differ.
func rulesNotMerged(list []*drEntry, chosen *drEntry, handled map[*drInfo]bool) []explain.Diagnostic {
	var out []explain.Diagnostic
	for _, e := range list {
		if e == chosen || e.primary.hasSelector {
			continue
		}
		for _, d := range e.from {
			if chosen.has(d) || handled[d] {
				continue
			}
			handled[d] = true
			out = append(out, diag.RulesNotMerged.New(
				fmt.Sprintf("%s and %s for host %s are not merged because their exportTo differ (%s vs %s): this proxy sees both and uses only the later one, %s",
					d.ref, entryName(chosen), d.host, exportSetText(e.exportTo), exportSetText(chosen.exportTo), entryName(chosen)),
				fmt.Sprintf("give %s and %s the same spec.exportTo so istiod merges them, or combine them into one DestinationRule", d.ref, chosen.primary.ref),
				d.ref, chosen.primary.ref))
		}
	}
	return out
}

// selectorShadowsFallback (D5): the first lookup step found only workloadSelector rules and none
// selects the proxy, so istiod stops there and the proxy gets no DestinationRule.
func (ix *Index) selectorShadowsFallback(p *Proxy, svc *Service, list []*drEntry, handled map[*drInfo]bool) explain.Diagnostic {
	host := svc.Hostname
	fallback, fstep := ix.lookupAfterClient(p.Namespace, svc.Namespace, host)
	selectorDRs := entryDRs(list)
	for _, d := range selectorDRs {
		handled[d] = true
	}
	resources := refsOf(selectorDRs)
	msg := fmt.Sprintf("%s for %s in namespace %s only applies to workloads its workloadSelector selects, and this proxy (labels %s) is not one of them: because the namespace has DestinationRules for the host, istiod does not look in the service or root namespace, and the proxy gets no DestinationRule",
		entriesName(list), host, p.Namespace, formatLabels(p.Labels))
	if fb := pick(fallback, p); len(fallback) > 0 && fb != nil {
		for _, d := range fb.from {
			handled[d] = true
			resources = append(resources, d.ref)
		}
		msg += fmt.Sprintf(" (%s in the %s would apply otherwise)", entryName(fb), stepName(fstep))
	}
	fix := fmt.Sprintf("add a DestinationRule without workloadSelector for %s in namespace %s (it applies when no selector matches), or make a workloadSelector match the proxy", host, p.Namespace)
	for _, d := range selectorDRs {
		if d.hasSelector {
			continue
		}
		// No Istio test pins this (docs/semantics/cluster.md#merging); mergeDestinationRule:
		// equal exportTo sets ({"."}) merge the plain rule into the selector rule and never
		// append it on its own.
		msg += fmt.Sprintf("; %s has no workloadSelector but was merged only into the workloadSelector rule, because both have exportTo \".\"", d.ref)
		fix = fmt.Sprintf("remove spec.exportTo from %s (or list the namespace by name) so istiod keeps it as a rule of its own, or make a workloadSelector match the proxy", d.ref)
	}
	return diag.SelectorRuleShadowsFallback.New(msg, fix, resources...)
}

// lookupAfterClient is the rest of the lookup after the client namespace (steps 2 and 3).
func (ix *Index) lookupAfterClient(clientNs, svcNs, host string) ([]*drEntry, int) {
	if svcNs != "" {
		if out := ix.exportedFrom(svcNs, host, clientNs); len(out) > 0 {
			return out, 2
		}
	}
	if out := ix.exportedFrom(ix.root, host, clientNs); len(out) > 0 {
		return out, 3
	}
	return nil, 0
}

func (ix *Index) selectsAnyWorkload(ns string, sel map[string]string) bool {
	for _, w := range ix.workloads[ns] {
		if meshhost.LabelsSubsetOf(sel, w.labels) {
			return true
		}
	}
	return false
}

// winnerText names what the proxy uses instead.
func winnerText(chosen *drEntry, step int) string {
	if chosen == nil {
		return "no DestinationRule"
	}
	return fmt.Sprintf("%s, found first in the %s", entryName(chosen), stepName(step))
}

// whyNot classifies one DestinationRule for the host that does not apply to the proxy.
func (ix *Index) whyNot(p *Proxy, svc *Service, d *drInfo, list []*drEntry, step int, chosen *drEntry) (explain.Diagnostic, bool) {
	c, s, root, host := p.Namespace, svc.Namespace, ix.root, svc.Hostname
	found := func(id diag.ID, msg, fix string, extra ...provenance.Ref) (explain.Diagnostic, bool) {
		return id.New(msg, fix, append([]provenance.Ref{d.ref}, extra...)...), true
	}
	chosenRefs := func() []provenance.Ref {
		if chosen == nil {
			return nil
		}
		return []provenance.Ref{chosen.primary.ref}
	}

	// D2 and D6 for a rule of another namespace are worded without the client's namespace:
	// they are one cause for every client outside the rule's namespace, and `check` merges
	// them into one finding that lists those clients.
	if d.ns != c && d.ns != s && d.ns != root {
		return found(diag.RuleOffLookupPath,
			fmt.Sprintf("%s (host %s) is never consulted for proxies outside namespace %s, this one included: istiod looks for DestinationRules of %s only in the proxy's own namespace, the service namespace %s and the root namespace %s",
				d.ref, d.host, d.ns, host, s, root),
			fmt.Sprintf("move %s to namespace %s (with exportTo including the namespaces of its clients) or to %s", d.ref, s, root))
	}
	if d.hasSelector && d.ns != c {
		return found(diag.SelectorRuleIgnored,
			fmt.Sprintf("%s has a workloadSelector (%s), so it is never exported: it applies only to proxies in namespace %s, not to this one",
				d.ref, formatLabels(d.selector), d.ns),
			fmt.Sprintf("create the rule in the namespace of the clients it is meant for, or remove spec.workloadSelector from %s", d.ref))
	}

	// Step 1: the client namespace's local index (the root namespace's private index for a
	// proxy in the root namespace).
	t1 := ix.drIx.local[c]
	in1 := c != root && d.ns == c && d.inLocal
	if c == root {
		t1 = ix.drIx.rootLocal
		in1 = d.ns == root && d.privateOnly
	}
	if in1 {
		mh, l1, _ := t1.match(host)
		if mh != d.host {
			return found(diag.RuleShadowed,
				fmt.Sprintf("%s (host %s) is shadowed by %s (host %s) in namespace %s: istiod uses only the most specific host within a namespace and does not fall back to less specific ones",
					d.ref, d.host, entriesName(l1), mh, d.ns),
				fmt.Sprintf("move the settings of %s into %s, or remove the more specific rule", d.ref, entriesName(l1)),
				refsOf(entryDRs(l1))...)
		}
		if d.hasSelector {
			if !meshhost.LabelsSubsetOf(d.selector, p.Labels) {
				msg := fmt.Sprintf("%s selects workloads with %s, which does not match this proxy's labels (%s)", d.ref, formatLabels(d.selector), formatLabels(p.Labels))
				if !ix.selectsAnyWorkload(d.ns, d.selector) {
					msg += fmt.Sprintf("; it selects no workload in namespace %s", d.ns)
				}
				return found(diag.SelectorRuleIgnored, msg,
					fmt.Sprintf("change spec.workloadSelector.matchLabels of %s to labels the intended workloads have", d.ref))
			}
			return found(diag.RuleShadowed,
				fmt.Sprintf("%s selects this proxy too, but %s comes first (workloadSelector rules are ordered by creation time) and is used", d.ref, entryNameOr(chosen, "another rule")),
				fmt.Sprintf("merge %s into %s, or narrow its spec.workloadSelector", d.ref, entryNameOr(chosen, "the rule used")), chosenRefs()...)
		}
		return found(diag.RuleShadowed,
			fmt.Sprintf("%s is not used by this proxy: it uses %s", d.ref, winnerText(chosen, step)),
			fmt.Sprintf("move the settings of %s into %s", d.ref, entryNameOr(chosen, "a rule this proxy uses")), chosenRefs()...)
	}
	if d.ns == c && c != root && !d.inLocal {
		return found(diag.RuleHiddenByExportTo,
			fmt.Sprintf("%s exports only to %s, which does not include its own namespace (. or %s), so it does not apply to proxies in %s", d.ref, d.exportToText(), d.ns, c),
			fmt.Sprintf("add . to spec.exportTo of %s", d.ref))
	}
	if d.ns == root && c != root && d.privateOnly && d.ns != s {
		return found(diag.RuleHiddenByExportTo,
			fmt.Sprintf("%s is private to the root namespace %s (%s): such rules apply only to proxies in %s, not to proxies in %s",
				d.ref, root, ix.privateReason(d), root, c),
			fmt.Sprintf("set spec.exportTo of %s to * or add %s to it", d.ref, c))
	}
	// Steps 2 and 3: exported rules of the service namespace, then of the root namespace.
	dstep := 3
	if d.ns == s {
		dstep = 2
	}
	if d.privateOnly {
		return found(diag.RuleHiddenByExportTo,
			fmt.Sprintf("%s is private to namespace %s (%s), so it does not apply to proxies in %s", d.ref, d.ns, ix.privateReason(d), c),
			fmt.Sprintf("add %s to spec.exportTo of %s", c, d.ref))
	}
	mh, l, _ := ix.drIx.exported[d.ns].match(host)
	if mh != d.host {
		msg := fmt.Sprintf("%s (host %s) is shadowed by %s (host %s) in namespace %s: istiod uses only the most specific host within a namespace and does not fall back to less specific ones",
			d.ref, d.host, entriesName(l), mh, d.ns)
		exported := false
		for _, e := range l {
			if exportedTo(e.exportTo, c) {
				exported = true
			}
		}
		if !exported {
			msg += fmt.Sprintf("; that rule is not exported to %s either, so namespace %s gives this proxy nothing", c, d.ns)
		}
		return found(diag.RuleShadowed, msg,
			fmt.Sprintf("move the settings of %s into %s, or remove the more specific rule", d.ref, entriesName(l)), refsOf(entryDRs(l))...)
	}
	for _, e := range l {
		if e.has(d) && !exportedTo(e.exportTo, c) {
			return found(diag.RuleHiddenByExportTo,
				fmt.Sprintf("%s is not visible from namespace %s (exportTo: %s)", d.ref, c, d.exportToText()),
				fmt.Sprintf("add %s to spec.exportTo of %s", c, d.ref))
		}
	}
	if step != 0 && step < dstep {
		return found(diag.RuleShadowed,
			fmt.Sprintf("%s (in the %s) is shadowed by %s: istiod stops at the first namespace that has a rule for %s and nothing is inherited from later ones",
				d.ref, stepName(dstep), winnerText(chosen, step), host),
			fmt.Sprintf("move the settings of %s into %s, or remove that rule if %s should apply", d.ref, entryNameOr(chosen, "the rule found first"), d.ref), chosenRefs()...)
	}
	return found(diag.RuleShadowed,
		fmt.Sprintf("%s is not used by this proxy: it uses %s", d.ref, winnerText(chosen, step)),
		fmt.Sprintf("move the settings of %s into %s", d.ref, entryNameOr(chosen, "a rule this proxy uses")), chosenRefs()...)
}

func entryNameOr(e *drEntry, alt string) string {
	if e == nil {
		return alt
	}
	return e.primary.ref.String()
}

func (ix *Index) privateReason(d *drInfo) string {
	if len(d.exportTo) == 0 {
		return "no exportTo, and MeshConfig defaultDestinationRuleExportTo contains ."
	}
	return "exportTo: " + d.exportToText()
}

// serviceEntryRejected is D33 for what Istio's validation rejects in the ServiceEntry that
// defines svc, if a ServiceEntry does, and in the WorkloadEntries behind its endpoints.
func (ix *Index) serviceEntryRejected(svc *Service) []explain.Diagnostic {
	var out []explain.Diagnostic
	if svc.Ref.Kind == "ServiceEntry" {
		for _, se := range ix.snap.ServiceEntries {
			if se.Namespace == svc.Ref.Namespace && se.Name == svc.Ref.Name {
				out = append(out, webhook.Diagnostics(diag.RejectedByValidation, svc.Ref,
					webhook.ServiceEntry(webhook.Meta{Name: se.Name, Namespace: se.Namespace, Annotations: se.Annotations, Labels: se.Labels}, &se.Spec))...)
				break
			}
		}
	}
	entries := map[provenance.Ref]bool{}
	for _, eps := range svc.Endpoints {
		for _, ep := range eps {
			if ep.Ref.Kind == "WorkloadEntry" {
				entries[ep.Ref] = true
			}
		}
	}
	if len(entries) == 0 {
		return out
	}
	for _, we := range ix.snap.WorkloadEntries {
		ref := provenance.Ref{Kind: "WorkloadEntry", Namespace: we.Namespace, Name: we.Name}
		if entries[ref] {
			out = append(out, webhook.Diagnostics(diag.RejectedByValidation, ref,
				webhook.WorkloadEntry(webhook.Meta{Name: we.Name, Namespace: we.Namespace, Annotations: we.Annotations, Labels: we.Labels}, &we.Spec))...)
		}
	}
	return out
}
