package ztunnelauthz

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	securityv1 "istio.io/client-go/pkg/apis/security/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/explain"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/explain/diag"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/meshhost"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/model"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/provenance"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/webhook"
)

// ObjectKind is the explain.Object kind of a ztunnel policy.
const ObjectKind = "istio.security.Authorization"

// Summary names and values that tell a listed policy from one that applies by scope.
const (
	// SummaryAttachment is the Summary entry saying how a policy reaches the workload.
	SummaryAttachment = "attachment"
	// AttachmentListedPrefix starts the attachment of a policy in the workload's key list:
	// `listed (key 2 of 3)`.
	AttachmentListedPrefix = "listed"
	// AttachmentScope is the attachment of a GLOBAL or NAMESPACE policy.
	AttachmentScope = "applies by scope (not in the workload's list)"
)

// Explain reports, for each pod the query names, the ztunnel Authorization policies istiod
// would push for it, in the order of the workload's key list, plus the policies that apply by
// scope, with the origin of every group, rule and match.
func Explain(snap *model.Snapshot, q Query) ([]*explain.Result, error) {
	return ExplainEach(snap, q, nil)
}

// ExplainEach is Explain for the pods the query names, with the answer of a pod for which
// other returns one (a sidecar pod's) taken from other: ztunnel's policies are built only
// for the pods it leaves (nil: for every pod).
func ExplainEach(snap *model.Snapshot, q Query, other func(*corev1.Pod) *explain.Result) ([]*explain.Result, error) {
	if snap == nil {
		return nil, errors.New("no snapshot to explain")
	}
	pods, err := resolvePods(snap, q)
	if err != nil {
		return nil, err
	}
	var p *pool
	out := make([]*explain.Result, 0, len(pods))
	for _, pod := range pods {
		if other != nil {
			if r := other(pod); r != nil {
				out = append(out, r)
				continue
			}
		}
		if p == nil {
			p = buildPool(snap, q.Revision)
		}
		out = append(out, explainPod(snap, p, pod, q, true))
	}
	return out, nil
}

// workload is the state of one pod's explanation.
type workload struct {
	snap *model.Snapshot
	pool *pool
	pod  *corev1.Pod
	q    Query
	res  *explain.Result
	// objects is false when only the diagnostics are wanted (Explainer.Diagnostics): the
	// policies in effect are found, but no object is made of them.
	objects bool

	capture captureResult
	chain   *chain
	// apKeys are the AuthorizationPolicy keys, sorted; keys the full list in istiod's order.
	apKeys, keys []string
	// nilLabelKeys are AP keys listed only because the pod's label map is nil.
	nilLabelKeys []string
	// inEffect are the pool policies ztunnel evaluates for the pod (listed and present, or by
	// scope); paInEffect only those derived from PeerAuthentication.
	inEffect, paInEffect []*Authorization
	waypoint             waypointInfo
	// selecting are the Services that select the pod.
	selecting []*corev1.Service
	// aps are the pool's policies of the pod's namespace and the root namespace (localAPs).
	aps []*apInfo
}

func explainPod(snap *model.Snapshot, p *pool, pod *corev1.Pod, q Query, objects bool) *explain.Result {
	podRef := model.ObjectKey{Kind: "Pod", Namespace: pod.Namespace, Name: pod.Name}.Ref()
	w := &workload{snap: snap, pool: p, pod: pod, q: q, objects: objects, res: &explain.Result{
		APIVersion: explain.APIVersion,
		Kind:       explain.KindAuthzExplanation,
		Subject:    explain.Subject{Kind: "Workload", Namespace: pod.Namespace, Workload: "pod/" + pod.Name, Resource: &podRef},
	}}
	w.selecting = servicesSelecting(p.services[pod.Namespace], pod)
	w.aps = p.localAPs(pod.Namespace)
	w.capture = decideCapture(snap, pod, objects)
	w.chain = buildChain(p, pod)
	w.waypoint = findWaypoints(snap, pod, w.selecting)
	w.computeKeys()
	w.addObjects()

	w.res.Sections = append(w.res.Sections, explain.Section{Title: "Capture", Columns: []string{"CHECK", "VALUE", "SOURCE"}, Rows: w.capture.rows})
	w.res.Sections = append(w.res.Sections, w.chain.sections()...)
	w.res.Sections = append(w.res.Sections, w.keySection())
	w.res.Sections = append(w.res.Sections, w.notAppliedSections()...)
	if s := w.waypointPolicySection(); s != nil {
		w.res.Sections = append(w.res.Sections, *s)
	}
	w.res.Sections = append(w.res.Sections, w.readingSection())
	if s := w.waypointSection(); s != nil {
		w.res.Sections = append(w.res.Sections, *s)
	}

	w.res.Diagnostics = append(w.res.Diagnostics, w.capture.diags...)
	w.res.Diagnostics = append(w.res.Diagnostics, w.chain.diagnostics(pod)...)
	w.res.Diagnostics = append(w.res.Diagnostics, w.keyDiagnostics()...)
	w.res.Diagnostics = append(w.res.Diagnostics, w.policyDiagnostics()...)
	w.res.Diagnostics = append(w.res.Diagnostics, w.servicePortDiagnostics()...)
	w.res.Diagnostics = append(w.res.Diagnostics, w.waypointDiagnostics()...)
	w.res.Diagnostics = append(w.res.Diagnostics, w.loadDiagnostics()...)
	if w.res.Objects == nil {
		w.res.Objects = []explain.Object{}
	}
	w.res.Diagnostics = diag.Sort(w.res.Diagnostics, diag.Identical)
	if w.res.Diagnostics == nil {
		w.res.Diagnostics = []explain.Diagnostic{}
	}
	for _, kind := range []string{"PeerAuthentication", "AuthorizationPolicy", "Pod", "Namespace"} {
		if why, ok := snap.Incomplete[kind]; ok {
			w.res.Warnings = append(w.res.Warnings, fmt.Sprintf("%s objects could not be read (%s): the policies shown may be incomplete", kind, why))
		}
	}
	return w.res
}

// computeKeys builds the workload's authorization_policies list the way
// workloads.go buildWorkloadPolicies does: the sorted AuthorizationPolicy keys, then the
// PeerAuthentication keys.
func (w *workload) computeKeys() {
	for _, ap := range w.aps {
		if !w.apListed(ap) {
			continue
		}
		key := ap.conv.auth.Key()
		w.apKeys = append(w.apKeys, key)
		if len(w.pod.Labels) == 0 {
			// A non-empty selector can never select a pod without labels; only the quirk lists it.
			w.nilLabelKeys = append(w.nilLabelKeys, key)
		}
	}
	slices.Sort(w.apKeys)
	slices.Sort(w.nilLabelKeys)
	w.keys = append(append([]string{}, w.apKeys...), w.chain.keys.keys()...)
}

// apListed says whether istiod lists a converted AuthorizationPolicy for the pod: it lives in
// the pod's namespace or the root namespace, has a non-empty matchLabels, and the matchLabels
// are a subset of the pod's labels. krt.FilterSelects skips label matching entirely when the
// pod's label map is nil, so a pod without labels lists every such policy. An empty label map
// counts as nil: the Kubernetes API drops `labels: {}` (omitempty), so a pod read from the
// cluster never has an empty non-nil map.
func (w *workload) apListed(ap *apInfo) bool {
	a := ap.conv.auth
	if a == nil || (a.Namespace != w.pool.root && a.Namespace != w.pod.Namespace) {
		return false
	}
	sel := ap.obj.Spec.GetSelector().GetMatchLabels()
	if len(sel) == 0 {
		return false
	}
	return len(w.pod.Labels) == 0 || meshhost.LabelsSubsetOf(sel, w.pod.Labels)
}

// appliesByScope says whether ztunnel applies a pool policy to the pod without a key: every
// GLOBAL policy and the NAMESPACE policies of the pod's namespace (ztunnel src/state.rs).
func (w *workload) appliesByScope(a *Authorization) bool {
	return a.Scope == ScopeGlobal || (a.Scope == ScopeNamespace && a.Namespace == w.pod.Namespace)
}

// addObjects turns the key list and the scope policies into Objects (unless w.objects is
// false) and finds the policies in effect. What ztunnel evaluates for the pod (assert_rbac in
// ztunnel src/state.rs) is the union of both; keys that are not in the pool are skipped there,
// and become Missing objects here.
func (w *workload) addObjects() {
	n := len(w.keys)
	for i, key := range w.keys {
		e := w.pool.entries[key]
		if e != nil {
			w.inEffect = append(w.inEffect, e.auth)
			if e.ap == nil {
				w.paInEffect = append(w.paInEffect, e.auth)
			}
		}
		if !w.objects {
			continue
		}
		attach := fmt.Sprintf("%s (key %d of %d)", AttachmentListedPrefix, i+1, n)
		var o explain.Object
		if e == nil {
			o = w.missingObject(key, attach)
		} else {
			o = w.object(e, attach)
		}
		o.Listed = true
		w.res.Objects = append(w.res.Objects, o)
	}
	for _, e := range w.pool.scoped {
		if !w.appliesByScope(e.auth) {
			continue
		}
		if w.objects {
			w.res.Objects = append(w.res.Objects, w.object(e, AttachmentScope))
		}
		w.inEffect = append(w.inEffect, e.auth)
	}
}

// object renders one pool policy with its origins. The static policy's origins depend on the
// workload (which PeerAuthentication made it STRICT), so they are recorded here.
func (w *workload) object(e *poolEntry, attach string) explain.Object {
	o := explain.Object{Kind: ObjectKind, Name: e.key, Summary: []explain.Summary{{Name: SummaryAttachment, Value: attach}}}
	if js, err := e.auth.JSON(); err == nil {
		o.Value = js
	}
	rec := e.rec
	switch {
	case e.ap != nil:
		ref := e.ap.ref()
		o.Summary = append(o.Summary, explain.Summary{Name: "source", Value: ref.String()})
		if strings.HasPrefix(attach, AttachmentListedPrefix) {
			why := "spec.selector matches the pod's labels"
			if slices.Contains(w.nilLabelKeys, e.key) {
				why = "the pod has no labels at all, and istiod then lists every selector policy of its namespace and the root namespace"
			}
			o.Summary = append(o.Summary, explain.Summary{Name: "listed because", Value: why})
		}
		if st := e.ap.conv.status; st != nil {
			o.Summary = append(o.Summary, explain.Summary{Name: ConditionZtunnelAccepted, Value: st.String()})
		}
	case e.pa != nil:
		o.Summary = append(o.Summary, explain.Summary{Name: "source", Value: paRefString(e.pa.obj)})
		if w.chain.wl == e.pa.obj && w.chain.keys.portKey == e.key {
			o.Summary = append(o.Summary, explain.Summary{Name: "listed because", Value: w.chain.keys.portKeyReason})
		}
		o.Summary = append(o.Summary, explain.Summary{Name: "parents", Value: parentsText(e.pa)})
	default:
		o.Summary = append(o.Summary, explain.Summary{Name: "source", Value: provenance.LayerTitle(provenance.LayerStaticPolicy)})
		because := provenance.Origin{Layer: provenance.LayerStaticPolicy, Note: "pushed whenever any PeerAuthentication exists"}
		if w.chain.keys.strictFrom != nil {
			because = paOrigin(w.snap, w.chain.keys.strictFrom).at("spec.mtls.mode", "effective mode STRICT: deny connections without a peer identity")
			o.Summary = append(o.Summary, explain.Summary{Name: "listed because", Value: "effective mode STRICT from " + paRefString(w.chain.keys.strictFrom)})
		}
		rec = staticStrictTraces(e.auth, because)
	}
	o.Summary = append(o.Summary,
		explain.Summary{Name: "scope", Value: e.auth.Scope.String()},
		explain.Summary{Name: "action", Value: e.auth.Action.String()})
	if rec != nil {
		o.Origins = rec.Traces()
	}
	if o.Origins == nil {
		o.Origins = []provenance.FieldTrace{}
	}
	return o
}

// parentsText names the parents a PeerAuthentication was converted with.
func parentsText(c *paConversion) string {
	s := func(pa *securityv1.PeerAuthentication) string {
		if pa == nil {
			return "none"
		}
		return pa.Namespace + "/" + pa.Name + " (" + paMode(pa).String() + ")"
	}
	return "namespace " + s(c.nsParent) + ", root " + s(c.rootParent)
}

// missingObject is a key istiod lists but does not push: ztunnel skips it with a warning.
func (w *workload) missingObject(key, attach string) explain.Object {
	o := explain.Object{Kind: ObjectKind, Name: key, Missing: true,
		Summary: []explain.Summary{{Name: SummaryAttachment, Value: attach}}}
	var trace provenance.FieldTrace
	trace.Path = "name"
	trace.Value = key[strings.IndexByte(key, '/')+1:]
	if wl := w.chain.wl; wl != nil && key == w.chain.keys.portKey {
		o.Summary = append(o.Summary,
			explain.Summary{Name: "source", Value: paRefString(wl)},
			explain.Summary{Name: "listed because", Value: w.chain.keys.portKeyReason},
			explain.Summary{Name: "note", Value: "istiod lists this key but converts the PeerAuthentication to nothing; ztunnel skips the key"})
		trace.Origin = paOrigin(w.snap, wl).at("spec.portLevelMtls", w.chain.keys.portKeyReason)
	} else {
		o.Summary = append(o.Summary, explain.Summary{Name: "note", Value: "no such policy in the pool; ztunnel skips the key"})
		trace.Origin = provenance.Origin{Layer: provenance.LayerIstioDefault, Note: "listed by istiod"}
	}
	o.Origins = []provenance.FieldTrace{trace}
	return o
}

// keySection lists the workload's keys in istiod's order with the input behind each, so the
// list can be diffed against `istioctl ztunnel-config` or a WDS dump.
func (w *workload) keySection() explain.Section {
	s := explain.Section{Title: "Policy keys", Columns: []string{"#", "KEY", "FROM", "PUSHED"}}
	for i, k := range w.keys {
		from := ""
		e := w.pool.entries[k]
		switch {
		case slices.Contains(w.apKeys, k) && e != nil:
			from = e.ap.ref().String() + " · spec.selector"
		case k == w.chain.keys.staticKey():
			from = "PeerAuthentication chain: effective STRICT"
		case k == w.chain.keys.portKey && w.chain.wl != nil:
			from = paRefString(w.chain.wl) + " · spec.portLevelMtls"
		}
		pushed := "yes"
		if e == nil {
			pushed = "no: dangling key, ztunnel skips it"
		}
		s.Rows = append(s.Rows, []string{fmt.Sprint(i + 1), k, from, pushed})
	}
	if len(w.keys) == 0 {
		s.Rows = append(s.Rows, []string{"", "(none)", "the workload lists no policy", ""})
	}
	return s
}

// relevantAP says whether an AuthorizationPolicy would reach the pod if istiod converted it:
// it lives in the pod's namespace or the root namespace and its selector (if any) selects the
// pod (an empty selector counts, as it looks like it would).
func (w *workload) relevantAP(ap *securityv1.AuthorizationPolicy) bool {
	if ap.Namespace != w.pool.root && ap.Namespace != w.pod.Namespace {
		return false
	}
	sel := ap.Spec.GetSelector()
	if sel == nil {
		return ap.Namespace == w.pod.Namespace || ap.Namespace == w.pool.root
	}
	return len(w.pod.Labels) == 0 || meshhost.LabelsSubsetOf(sel.GetMatchLabels(), w.pod.Labels)
}

// notAppliedSections lists the policies of the pod's and the root namespace that could have
// reached the pod but do not (docs/semantics/authz.md#the-key-list): dry-run, AUDIT/CUSTOM,
// empty selector, other revisions; and, for -o wide, selector policies that do not select it.
func (w *workload) notAppliedSections() []explain.Section {
	main := explain.Section{Title: "Not applied", Columns: []string{"POLICY", "WHY"}}
	wide := explain.Section{Title: "Not selecting this workload", Columns: []string{"POLICY", "WHY"}, Wide: true}
	for _, ap := range w.aps {
		ref := ap.ref().String()
		c := ap.conv
		switch {
		case len(c.targetRefs) > 0:
			// Listed in the waypoint section.
		case c.auth == nil && c.dryRun:
			if w.relevantAP(ap.obj) {
				main.Rows = append(main.Rows, []string{ref, "dry-run: not sent to ztunnel (ambient dry-run support is off by default); " + ConditionZtunnelAccepted + " " + c.status.String()})
			}
		case c.auth == nil:
			if w.relevantAP(ap.obj) {
				main.Rows = append(main.Rows, []string{ref, "action " + ap.obj.Spec.Action.String() + " is not supported by ztunnel: not sent; " + ConditionZtunnelAccepted + " " + c.status.String()})
			}
		case c.auth.Scope == ScopeWorkloadSelector && len(ap.obj.Spec.GetSelector().GetMatchLabels()) == 0:
			main.Rows = append(main.Rows, []string{ref, "empty selector: WORKLOAD_SELECTOR scope but no workload lists it (no effect)"})
		case c.auth.Scope == ScopeWorkloadSelector && !w.apListed(ap):
			wide.Rows = append(wide.Rows, []string{ref, "spec.selector does not match the pod's labels"})
		}
	}
	for _, r := range w.pool.excluded {
		if r.Namespace == w.pool.root || r.Namespace == w.pod.Namespace {
			main.Rows = append(main.Rows, []string{r.String(), fmt.Sprintf("labelled for another istiod revision (%s), not %q", revisionLabel, w.q.Revision)})
		}
	}
	var out []explain.Section
	if len(main.Rows) > 0 {
		out = append(out, main)
	}
	if len(wide.Rows) > 0 {
		out = append(out, wide)
	}
	return out
}

// keyDiagnostics reports the mismatches between the key list and the pool
// (docs/semantics/authz.md#keys-and-conversion-disagree).
func (w *workload) keyDiagnostics() []explain.Diagnostic {
	var out []explain.Diagnostic
	podName := w.pod.Namespace + "/" + w.pod.Name
	for _, k := range w.keys {
		if w.pool.entries[k] != nil {
			continue
		}
		var refs []provenance.Ref
		if w.chain.wl != nil {
			refs = append(refs, paKey(w.chain.wl).Ref())
		}
		out = append(out, diag.DanglingPolicyKey.New(
			fmt.Sprintf("pod %s lists %s, but istiod pushes no such policy (the PeerAuthentication converts to nothing), so ztunnel skips the key", podName, k),
			"see the PeerAuthentication reading below for what is actually enforced; set the workload policy's mode explicitly (STRICT or PERMISSIVE) so key and conversion agree",
			refs...))
	}
	// Ports whose effective plaintext verdict contradicts what the PeerAuthentications say.
	// Keys (a.3) and conversion (b.2) use different conditions, so the listed policies can
	// leave a STRICT port open (b.4 rows 1 and 2) or keep an exempted port strict (row 3).
	var lost, over []string
	for _, port := range w.ports() {
		mode, _ := w.chain.intendedMode(w.snap, port.num)
		rejected := strings.HasPrefix(verdict(w.paInEffect, conn{port: port.num, plaintext: true}), "denied")
		switch {
		case mode == modeStrict && !rejected:
			lost = append(lost, portLabel(port.num))
		case mode != modeStrict && rejected:
			over = append(over, portLabel(port.num))
		}
	}
	var refs []provenance.Ref
	for _, pa := range []*securityv1.PeerAuthentication{w.chain.mesh, w.chain.ns, w.chain.wl} {
		if pa != nil {
			refs = append(refs, paKey(pa).Ref())
		}
	}
	if len(lost) > 0 {
		out = append(out, diag.LosesStrict.New(
			fmt.Sprintf("pod %s silently loses STRICT: its PeerAuthentications say STRICT for %s, but ztunnel accepts plaintext there", podName, strings.Join(lost, ", ")),
			"give the workload PeerAuthentication an explicit top-level mode (e.g. mtls.mode: STRICT with the port exemptions), or set the namespace policy's mode instead of leaving it UNSET",
			refs...))
	}
	// The mechanism diagnostics (dangling key, unreferenced conversion) already explain these.
	explained := slices.ContainsFunc(w.keys, func(k string) bool { return w.pool.entries[k] == nil })
	if wl := w.chain.wl; wl != nil {
		if c := w.pool.paConv[wl]; c != nil && c.auth != nil && !slices.Contains(w.keys, c.auth.Key()) {
			explained = true
		}
	}
	if len(over) > 0 && !explained {
		out = append(out, diag.ExemptionStillStrict.New(
			fmt.Sprintf("pod %s: its PeerAuthentications exempt %s from STRICT, but ztunnel still rejects plaintext there", podName, strings.Join(over, ", ")),
			"use PERMISSIVE rather than DISABLE for the port exemption, or set the workload policy's mode to STRICT explicitly",
			refs...))
	}
	// The winning workload PeerAuthentication was converted but the workload does not list it.
	if wl := w.chain.wl; wl != nil {
		if c := w.pool.paConv[wl]; c != nil && c.auth != nil && !slices.Contains(w.keys, c.auth.Key()) {
			out = append(out, diag.UnreferencedPeerAuthentication.New(
				fmt.Sprintf("converted policy %s is pushed but not referenced by pod %s, so its port rules (%s) do not apply to it%s", c.auth.Key(), podName, portLevelText(wl), overText(over)),
				"use PERMISSIVE rather than DISABLE for the exempted port, or set the workload policy's mode to STRICT explicitly",
				paKey(wl).Ref()))
		}
		if c := w.pool.paConv[wl]; c != nil && len(c.nsTie)+len(c.rootTie) > 0 {
			refs := []provenance.Ref{paKey(wl).Ref()}
			for _, t := range append(append([]*securityv1.PeerAuthentication{}, c.nsTie...), c.rootTie...) {
				refs = append(refs, paKey(t).Ref())
			}
			out = append(out, diag.ParentPeerAuthenticationTie.New(
				fmt.Sprintf("the parents used to convert %s are tied on creationTimestamp with other selector-less PeerAuthentications; istiod's choice is undecidable offline (guessed %s)", paRefString(wl), parentsText(c)),
				"keep one selector-less PeerAuthentication per namespace",
				refs...))
		}
	}
	if len(w.nilLabelKeys) > 0 {
		out = append(out, diag.PodWithoutLabels.New(
			fmt.Sprintf("pod %s has no labels, so istiod skips selector matching and lists every selector policy of its namespace and the root namespace: %s", podName, strings.Join(w.nilLabelKeys, ", ")),
			"give the pod labels (controllers always do)",
			provenance.Ref{Kind: "Pod", Namespace: w.pod.Namespace, Name: w.pod.Name}))
	}
	return out
}

// overText completes the unreferenced-conversion message with its effect.
func overText(ports []string) string {
	if len(ports) == 0 {
		return ""
	}
	return ": ztunnel still rejects plaintext on " + strings.Join(ports, ", ")
}

// policyDiagnostics turns the findings of the AuthorizationPolicies that reach (or look like
// they reach) the pod into diagnostics, with what Istio's validation rejects in them and in the
// pod's PeerAuthentications (A25).
func (w *workload) policyDiagnostics() []explain.Diagnostic {
	var out []explain.Diagnostic
	for _, ap := range w.aps {
		if !w.relevantAP(ap.obj) {
			continue
		}
		for _, f := range ap.conv.findings {
			msg := f.message
			if f.field != "" {
				msg = f.field + ": " + msg
			}
			out = append(out, f.id.New(msg, f.fix, ap.ref()))
		}
		out = append(out, ap.rejectedByValidation()...)
	}
	for _, pa := range []*securityv1.PeerAuthentication{w.chain.mesh, w.chain.ns, w.chain.wl} {
		if pa != nil {
			out = append(out, webhook.Diagnostics(diag.PolicyRejectedByValidation, paKey(pa).Ref(), webhook.PeerAuthentication(webhook.Meta{Name: pa.Name, Namespace: pa.Namespace, Annotations: pa.Annotations}, &pa.Spec))...)
		}
	}
	for _, r := range w.pool.excluded {
		if r.Namespace == w.pool.root || r.Namespace == w.pod.Namespace {
			out = append(out, diag.OtherRevision.New(
				fmt.Sprintf("metadata.labels[%s]: istiod revision %q does not watch this object, so it has no effect", revisionLabel, w.q.Revision),
				"",
				r))
		}
	}
	return out
}

// loadDiagnostics reports the load problems with objects that matter to this pod.
func (w *workload) loadDiagnostics() []explain.Diagnostic {
	var out []explain.Diagnostic
	for _, is := range w.snap.Issues {
		if !is.AffectsPod(podAnswerKinds, w.pod.Namespace, w.pool.root) {
			continue
		}
		sev := explain.SeverityWarning
		if is.Severity == string(explain.SeverityError) {
			sev = explain.SeverityError
		}
		d := diag.LoadIssue.At(sev, is.Describe(), "fix the object; everything else is explained without it")
		if is.Resource != nil {
			d.Resources = []provenance.Ref{*is.Resource}
		}
		out = append(out, d)
	}
	return out
}

// podAnswerKinds are the kinds whose load problems can change this answer.
var podAnswerKinds = []string{"AuthorizationPolicy", "PeerAuthentication", "Pod", "Namespace", "Service", "Deployment"}
