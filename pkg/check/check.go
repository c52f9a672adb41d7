package check

import (
	"cmp"
	"fmt"
	"maps"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/engine/envoycluster"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/engine/sidecarauthz"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/engine/waypointauthz"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/engine/ztunnelauthz"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/explain"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/explain/diag"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/index"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/internal/parallel"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/model"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/provenance"
)

// Options say what to check.
type Options struct {
	// Namespaces are the namespaces whose clients and workloads are checked; nil
	// checks every namespace of the snapshot.
	Namespaces []string
	// Revision is the istiod revision (`--revision`) whose view of the policies is checked.
	Revision string
	// Ignore are diagnostic IDs silenced everywhere (`--ignore`).
	Ignore []string
	// Workers bound the concurrent client classes (0: GOMAXPROCS).
	Workers int
	// noGroups answers every namespace default for every host itself, not once per group of
	// plain namespaces (groupPlan): the tests compare the two.
	noGroups bool
}

// WorkloadEngine answers the per-workload question for the pods of one data plane: the
// ztunnel answer for ambient pods (ZtunnelEngine), the sidecar answer for pods with a sidecar
// (SidecarEngine). Adding an engine to WorkloadEngines is all a new kind of workload needs.
type WorkloadEngine interface {
	// DataPlane names the engine's data plane in the report ("ambient", "sidecar").
	DataPlane() string
	// Applies reports whether the engine answers for pod.
	Applies(pod *corev1.Pod) bool
	// Explain answers for pod; check reads only the Result's diagnostics.
	Explain(pod *corev1.Pod) *explain.Result
}

// ztunnelEngine is `authz` for ambient pods.
type ztunnelEngine struct {
	snap *model.Snapshot
	e    *ztunnelauthz.Explainer
}

// ZtunnelEngine is the ztunnel answer (`authz`) for the ambient pods of snap.
func ZtunnelEngine(snap *model.Snapshot, revision string) WorkloadEngine {
	return &ztunnelEngine{snap: snap, e: ztunnelauthz.NewExplainer(snap, revision)}
}

func (z *ztunnelEngine) DataPlane() string { return "ambient" }

// Applies is true for an ambient pod without a sidecar: `authz` answers a pod with a sidecar
// with the sidecar's filter chains, whatever its ambient labels say, and a waypoint's pod with
// its waypoint. A gateway ztunnel captures is answered (ztunnel's part of its policy).
func (z *ztunnelEngine) Applies(pod *corev1.Pod) bool {
	return !sidecarauthz.HasSidecar(pod) && !isWaypointProxy(pod) && ztunnelauthz.Ambient(z.snap, pod)
}

// Explain is the ztunnel answer's diagnostics (ztunnelauthz.Explainer.Diagnostics), without
// the objects check never prints.
func (z *ztunnelEngine) Explain(pod *corev1.Pod) *explain.Result {
	return &explain.Result{Diagnostics: z.e.Diagnostics(pod)}
}

// sidecarEngine is `authz` for pods with a sidecar.
type sidecarEngine struct{ x *sidecarauthz.Explainer }

// SidecarEngine is the sidecar answer (`authz`: the virtualInbound filter chains) for the pods
// of snap that have a sidecar.
func SidecarEngine(snap *model.Snapshot) WorkloadEngine {
	return sidecarEngine{x: sidecarauthz.NewExplainer(snap)}
}

func (s sidecarEngine) DataPlane() string { return "sidecar" }

// Applies is true for a pod with a sidecar, but not a gateway's proxy, which the gateway
// injection template injects with the same annotation (isGatewayProxy).
func (s sidecarEngine) Applies(pod *corev1.Pod) bool {
	return sidecarauthz.HasSidecar(pod) && !isGatewayProxy(pod)
}

// Explain is the sidecar answer's diagnostics (sidecarauthz.Diagnostics), without the
// sections and filter chains check never prints.
func (s sidecarEngine) Explain(pod *corev1.Pod) *explain.Result {
	return &explain.Result{Diagnostics: s.x.Diagnostics(pod)}
}

// WorkloadEngines are the per-workload engines Run asks; a pod is answered by the first that
// applies, as `authz pod/NAME` answers it.
func WorkloadEngines(snap *model.Snapshot, revision string) []WorkloadEngine {
	return []WorkloadEngine{SidecarEngine(snap), ZtunnelEngine(snap, revision)}
}

// occurrence is one diagnostic of one answer: for a host from a class of clients, or for a
// workload.
type occurrence struct {
	// d is the diagnostic in its answer, which occurrences share and nothing changes.
	d *explain.Diagnostic
	// key is causeOf(*d), when known: an answer shared by many clients is keyed once.
	key      *cause
	host     string
	clients  []string
	workload string
	waypoint string
	// subject is the Service, ServiceEntry, Pod or Gateway the answer is about.
	subject *provenance.Ref
}

// Run checks snap: every host from every client class in scope, and every workload in scope.
func Run(snap *model.Snapshot, o Options) (*explain.CheckReport, error) {
	if snap == nil {
		return nil, fmt.Errorf("no snapshot to check")
	}
	ix := index.Build(snap)
	classes := Classes(snap, Clients(snap, o.Namespaces))
	rep := &explain.CheckReport{APIVersion: explain.APIVersion, Kind: explain.KindCheckReport,
		Scope: explain.CheckScope{Namespaces: o.Namespaces, ClientClasses: len(classes)}}
	for _, c := range classes {
		rep.Scope.Clients += len(c.Members)
		if c.Router {
			rep.Scope.Gateways += len(c.Members)
		}
	}

	m := newMerger(snap, newIgnorer(snap, o.Ignore))
	grouping := planGroups(snap, ix)
	if o.noGroups {
		grouping = nil
	}
	// The workloads and waypoints are answered while the hosts are: neither reads the other,
	// and each leaves a core idle at times (the hosts between their phases, the workloads
	// while grouping replicas).
	var (
		hosts  int
		err    error
		wl, wp []occurrence
		counts map[string]int
		n      int
	)
	engines := WorkloadEngines(snap, o.Revision)
	parallel.Each(2, func(i int) {
		if i == 0 {
			hosts, err = hostOccurrences(ix, classes, planReuse(snap, classes), grouping, o.Workers, m)
			return
		}
		wl, counts = workloadOccurrences(snap, engines, o.Namespaces)
		wp, n = waypointOccurrences(snap, o.Namespaces)
	})
	if err != nil {
		return nil, err
	}
	rep.Scope.Hosts = hosts
	for _, n := range counts {
		rep.Scope.Workloads += n
	}
	if len(counts) > 0 {
		rep.Scope.DataPlanes = counts
	}
	// The workloads' occurrences come after those of every class, the waypoints' last.
	m.add(len(classes), wl)
	rep.Scope.Waypoints = n
	m.add(len(classes)+1, wp)
	rep.Findings = m.findings()
	if why, ok := snap.Incomplete["PeerAuthentication"]; ok {
		rep.Warnings = append(rep.Warnings, fmt.Sprintf("mTLS inference is incomplete: PeerAuthentications could not be read (%s)", why))
	}
	for _, kind := range []string{"AuthorizationPolicy", "RequestAuthentication", "Pod", "Namespace", "DestinationRule", "Sidecar", "Service", "ServiceEntry", "VirtualService", "Gateway"} {
		if why, ok := snap.Incomplete[kind]; ok {
			rep.Warnings = append(rep.Warnings, fmt.Sprintf("%s objects could not be read (%s): findings may be missing", kind, why))
		}
	}
	return rep, nil
}

// hostOccurrences explains every host in the scope of each class's proxy, one Explainer per
// class (its index and scope kept across the hosts), the classes spread over workers; the
// classes that take answers of others (reuse) after those. Each class's occurrences go to m as
// soon as the class is explained, as batch i for the class i, and are not kept. It returns the
// number of hosts explained for at least one class, and the error of the first class that
// failed.
func hostOccurrences(ix *index.Index, classes []*Class, reuse *reusePlan, grouping *groupPlan, workers int, m *merger) (int, error) {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	type result struct {
		i       int
		occ     []occurrence
		inScope []bool
		err     error
	}
	hosts := envoycluster.Hostnames(ix)
	reuse.prepare(hosts)
	if err := grouping.prepare(ix, classes, hosts); err != nil {
		return 0, err
	}
	shared := envoycluster.NewSharedBuilds(ix)
	results := make(chan result, workers)
	go func() {
		defer close(results)
		for _, phase := range reuse.phases(classes) {
			next := make(chan int)
			var wg sync.WaitGroup
			for range min(workers, max(len(phase), 1)) {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range next {
						occ, inScope, err := classOccurrencesSafely(ix, shared, grouping, classes[i], reuse, hosts)
						results <- result{i, occ, inScope, err}
					}
				}()
			}
			for _, i := range phase {
				next <- i
			}
			close(next)
			wg.Wait()
		}
	}()
	seen := make([]bool, len(hosts))
	failed, firstErr := len(classes), error(nil)
	for r := range results {
		if r.err != nil {
			if r.i < failed {
				failed, firstErr = r.i, r.err
			}
			continue
		}
		if firstErr != nil {
			continue
		}
		m.add(r.i, r.occ)
		for i, in := range r.inScope {
			seen[i] = seen[i] || in
		}
	}
	if firstErr != nil {
		return 0, firstErr
	}
	n := 0
	for _, in := range seen {
		if in {
			n++
		}
	}
	return n, nil
}

// classOccurrencesSafely is classOccurrences on a worker goroutine, where a panic would end
// the process: it is recovered as the class's error, naming the clients it was checking for.
func classOccurrencesSafely(ix *index.Index, shared *envoycluster.SharedBuilds, grouping *groupPlan, c *Class, reuse *reusePlan, hosts []string) (occ []occurrence, inScope []bool, err error) {
	defer func() {
		if r := recover(); r != nil {
			names := c.names()
			if len(names) > 3 {
				names = append(names[:3:3], fmt.Sprintf("and %d more", len(names)-3))
			}
			occ, inScope, err = nil, nil, fmt.Errorf("internal error while checking the hosts of clients %s: %v", strings.Join(names, ", "), r)
		}
	}()
	if testHookClass != nil {
		testHookClass(c)
	}
	return classOccurrences(ix, shared, grouping, c, reuse, hosts)
}

// testHookClass, when set, is called with each class before its hosts are checked; tests use
// it to make a worker panic.
var testHookClass func(c *Class)

// classOccurrences is what `cluster HOST` reports for each of hosts (envoycluster.Hostnames)
// in the scope of the class's proxy (Explainer.HostDiagnostics), or, where reuse allows, what
// the class of its namespace's default sidecar was told. The cluster builds are shared with the
// other classes through shared. The answer a plain namespace shares with the others
// (groupPlan) is listed once, for all of them, by the first. inScope marks the hosts in the
// proxy's scope.
func classOccurrences(ix *index.Index, shared *envoycluster.SharedBuilds, grouping *groupPlan, c *Class, reuse *reusePlan, hosts []string) (out []occurrence, inScope []bool, err error) {
	proxy, err := c.proxy(ix)
	if err != nil {
		return nil, nil, err
	}
	e := envoycluster.NewExplainer(ix, proxy)
	names := c.names()
	groups := c.byLabels()
	// others are the groups of members whose labels differ from the first member's, made when
	// a host's answer names the labels: their own proxy diagnostics, and the answer of the
	// first member with their labels in it (relabel).
	var others []otherLabels
	inScope = make([]bool, len(hosts))
	proxyDiags := e.ProxyDiagnostics()
	proxyKeys := keysOf(proxyDiags)
	// folded: the class's answer, where it takes its namespace default's, is that class's
	// answer in full (the same proxy diagnostics too), so `Namespace NS` in the default's
	// findings already stands for its pods (docs/output.md) and the class adds nothing.
	folded, err := reuse.folds(ix, c, proxyKeys)
	if err != nil {
		return nil, nil, err
	}
	take := reuse.taking(c, proxy.Labels)
	named := namesLabels(proxy.Labels)
	for i, h := range hosts {
		var a hostAnswer
		sharedAnswer := false
		// listProxy: the class lists its proxy's diagnostics for the host (pd, pk).
		listProxy, pd, pk := true, proxyDiags, proxyKeys
		if t := take.answer(i); t != nil {
			if !t.names {
				if t.inScope {
					inScope[i] = true
					if !folded {
						out = appendHost(out, *t, proxyDiags, proxyKeys, h, names)
					}
				}
				continue
			}
			// The answer prints the proxy's labels: listed as the class's own answer below.
			a = *t
			if folded {
				// It is the base's answer but for the diagnostics that print the labels:
				// `Namespace NS` in the base's findings stands for the class in the rest, and
				// in the proxy's diagnostics.
				a, listProxy, pd, pk = a.only(named), false, nil, nil
			}
		} else {
			a, sharedAnswer, err = hostOf(e, shared, grouping, c, i, h)
			if err != nil {
				return nil, nil, err
			}
			if reuse.records(c) {
				reuse.record(c, named, i, a)
			}
		}
		if !a.inScope {
			// Outside the proxy's scope: not a host this client sees.
			continue
		}
		inScope[i] = true
		if len(groups) == 1 || !slices.ContainsFunc(a.diags, named) && !slices.ContainsFunc(proxyDiags, named) {
			if sharedAnswer && grouping.lists(c) && !slices.ContainsFunc(a.diags, named) {
				// The answer of every plain namespace that lists it (groupPlan sharers): the
				// first of them in class order lists it once for all, each its own proxy's.
				if grouping.leads(c, i) {
					out = appendHost(out, a, nil, nil, h, grouping.sharers[i])
				}
				out = appendHost(out, hostAnswer{subject: a.subject}, proxyDiags, proxyKeys, h, names)
				continue
			}
			out = appendHost(out, a, pd, pk, h, names)
			continue
		}
		// The answer names the proxy's labels: each group of members with the same labels
		// gets its own.
		out = appendHost(out, a, pd, pk, h, groupNames(groups[0]))
		if others == nil {
			for _, g := range groups[1:] {
				p, err := memberProxy(ix, g[0])
				if err != nil {
					return nil, nil, err
				}
				diags := envoycluster.NewExplainer(ix, p).ProxyDiagnostics()
				others = append(others, otherLabels{names: groupNames(g), proxyDiags: diags, proxyKeys: keysOf(diags),
					relabel: newRelabeler(proxy.Labels, g[0].Labels)})
			}
		}
		for _, o := range others {
			diags, _ := o.relabel.apply(a.diags)
			opd, opk := o.proxyDiags, o.proxyKeys
			if !listProxy {
				opd, opk = nil, nil
			}
			out = appendHost(out, hostAnswer{inScope: true, subject: a.subject, diags: diags}, opd, opk, h, o.names)
		}
	}
	return out, inScope, nil
}

// otherLabels is a group of a class's members whose labels differ from the first member's.
type otherLabels struct {
	names      []string
	proxyDiags []explain.Diagnostic
	proxyKeys  []cause
	relabel    relabeler
}

// hostOf is the answer of c's proxy (e's) for host (at i of the hosts), but the proxy's own
// diagnostics: the one shared by the plain namespaces (groupPlan) when c is one of them and it
// was made, else Explainer.HostDiagnostics. shared reports whether the answer is the one every
// plain namespace takes for the host.
func hostOf(e *envoycluster.Explainer, builds *envoycluster.SharedBuilds, grouping *groupPlan, c *Class, i int, host string) (a hostAnswer, shared bool, err error) {
	plain := grouping.plainAt(c, i)
	if plain {
		if a, ok := grouping.answer(host); ok {
			return a, true, nil
		}
	}
	svc, diags, err := e.HostDiagnostics(host, builds)
	if err != nil {
		return hostAnswer{}, false, err
	}
	a = hostAnswer{inScope: svc != nil}
	if a.inScope {
		a.subject, a.diags, a.keys = svc.Ref, diags, keysOf(diags)
	}
	if plain {
		shared = grouping.record(c.Namespace, host, a)
	}
	return a, shared, nil
}

// appendHost records the diagnostics of host's answer a, then those of the proxy, for clients;
// keys are those of the proxy's diagnostics, or nil.
func appendHost(out []occurrence, a hostAnswer, proxyDiags []explain.Diagnostic, proxyKeys []cause, host string, clients []string) []occurrence {
	subject := &a.subject
	for i := range a.diags {
		out = append(out, occurrence{d: &a.diags[i], key: keyAt(a.keys, i), host: host, clients: clients, subject: subject})
	}
	for i := range proxyDiags {
		out = append(out, occurrence{d: &proxyDiags[i], key: keyAt(proxyKeys, i), host: host, clients: clients, subject: subject})
	}
	return out
}

// keyAt is keys[i], or nil when keys has none.
func keyAt(keys []cause, i int) *cause {
	if i < len(keys) {
		return &keys[i]
	}
	return nil
}

// keysOf are the keys of diags.
func keysOf(diags []explain.Diagnostic) []cause {
	if len(diags) == 0 {
		return nil
	}
	out := make([]cause, len(diags))
	for i, d := range diags {
		out[i] = causeOf(d)
	}
	return out
}

// workloadOccurrences asks, for every pod of namespaces (nil: all), the first engine that
// applies to it, and returns the occurrences and the number of pods answered for by each
// engine's data plane.
func workloadOccurrences(snap *model.Snapshot, engines []WorkloadEngine, namespaces []string) ([]occurrence, map[string]int) {
	occ, counts, _ := workloadAnswers(snap, engines, namespaces)
	return occ, counts
}

// workloadAnswers is workloadOccurrences, and the number of pods that took the answer of a
// replica (replicaAnswers). The pods are explained on every core, the replicas of one owner
// in order on one goroutine (a replica takes the answer of the first explained); the
// occurrences come in pod order. A panic in an engine is raised again on the caller's
// goroutine, where the command reports it, rather than ending the process from a worker.
func workloadAnswers(snap *model.Snapshot, engines []WorkloadEngine, namespaces []string) ([]occurrence, map[string]int, int) {
	type job struct {
		pod    *corev1.Pod
		engine int
		diags  []explain.Diagnostic
	}
	var jobs []*job
	counts := map[string]int{}
	// groups are the jobs by owner (replicaKeyOf), a pod without one alone, in pod order.
	var groups [][]*job
	byOwner := map[replicaKey]int{}
	for _, pod := range snap.Pods {
		if namespaces != nil && !slices.Contains(namespaces, pod.Namespace) {
			continue
		}
		i := slices.IndexFunc(engines, func(e WorkloadEngine) bool { return e.Applies(pod) })
		if i < 0 {
			continue
		}
		counts[engines[i].DataPlane()]++
		j := &job{pod: pod, engine: i}
		jobs = append(jobs, j)
		k, ok := replicaKeyOf(pod)
		if g, seen := byOwner[k]; ok && seen {
			groups[g] = append(groups[g], j)
			continue
		}
		if ok {
			byOwner[k] = len(groups)
		}
		groups = append(groups, []*job{j})
	}
	var taken atomic.Int64
	parallel.Each(len(groups), func(g int) {
		replicas := newReplicaAnswers()
		for _, j := range groups[g] {
			diags, ok := replicas.answer(j.pod, j.engine)
			if !ok {
				diags = engines[j.engine].Explain(j.pod).Diagnostics
				replicas.record(j.pod, j.engine, diags)
			}
			j.diags = diags
		}
		taken.Add(int64(replicas.taken))
	})
	var out []occurrence
	for _, j := range jobs {
		ref := provenance.Ref{Kind: "Pod", Namespace: j.pod.Namespace, Name: j.pod.Name}
		for k := range j.diags {
			out = append(out, occurrence{d: &j.diags[k], workload: ref.String(), subject: &ref})
		}
	}
	return out, counts, int(taken.Load())
}

// waypointOccurrences asks `authz waypoint/NAME` of every waypoint (a Gateway of class
// istio-waypoint) of namespaces (nil: all), and returns the occurrences and the number of
// waypoints answered for.
func waypointOccurrences(snap *model.Snapshot, namespaces []string) ([]occurrence, int) {
	var gws []*gatewayv1.Gateway
	for _, gw := range snap.Gateways {
		if string(gw.Spec.GatewayClassName) == waypointauthz.ClassName && (namespaces == nil || slices.Contains(namespaces, gw.Namespace)) {
			gws = append(gws, gw)
		}
	}
	// Each waypoint's answer reads every Service, ServiceEntry and workload for its bindings:
	// the waypoints are explained on every core, their occurrences kept in Gateway order.
	diags := make([][]explain.Diagnostic, len(gws))
	parallel.Each(len(gws), func(i int) { diags[i] = waypointauthz.Diagnostics(snap, gws[i]) })
	var out []occurrence
	for i, gw := range gws {
		ref := provenance.Ref{Kind: "Gateway", Namespace: gw.Namespace, Name: gw.Name}
		for k := range diags[i] {
			out = append(out, occurrence{d: &diags[i][k], waypoint: ref.String(), subject: &ref})
		}
	}
	return out, len(gws)
}

// key is what makes two diagnostics one cause: the same ID, severity, fix and resources. Their
// messages may differ in what the answer was about (the cluster, the client's namespace): the
// finding keeps them all. A diagnostic without a fix is one cause per message.
func key(d explain.Diagnostic) string {
	var b strings.Builder
	b.WriteString(d.ID)
	b.WriteByte(0)
	b.WriteString(string(d.Severity))
	b.WriteByte(0)
	b.WriteString(d.Fix)
	if d.Fix == "" {
		b.WriteByte(0)
		b.WriteString(d.Message)
	}
	for _, r := range d.Resources {
		b.WriteByte(0)
		b.WriteString(r.String())
	}
	return b.String()
}

// Key is the identity of a cause, across reports (the --diff of two checks) and answers.
func Key(d explain.Diagnostic) string { return key(d) }

// cause is key(d) as a map key made without building a string: the merger keys every
// occurrence (hundreds of thousands at 10,000 Services), and the spelled keys were an eighth
// of the bytes `check` allocated. Two diagnostics have the same cause exactly when they have
// the same key.
type cause struct {
	id       string
	severity explain.Severity
	fix      string
	// message is the message of a diagnostic without a fix, else empty.
	message string
	// resources are the first resources, n how many there are, and more spells the others
	// (key's spelling) when there are more.
	resources [2]provenance.Ref
	n         int
	more      string
}

func causeOf(d explain.Diagnostic) cause {
	c := cause{id: d.ID, severity: d.Severity, fix: d.Fix, n: len(d.Resources)}
	if d.Fix == "" {
		c.message = d.Message
	}
	copy(c.resources[:], d.Resources)
	if len(d.Resources) > len(c.resources) {
		var b strings.Builder
		for _, r := range d.Resources[len(c.resources):] {
			b.WriteByte(0)
			b.WriteString(r.String())
		}
		c.more = b.String()
	}
	return c
}

// merger turns occurrences into findings, one per cause, silenced as its ignorer says. The
// occurrences come in batches (one per class, then the workloads') in any order; the findings
// are what merging every batch in batch order would give: a finding is worded and located by
// its first occurrence, silenced by the reason of its first silenced occurrence, and findings
// that sort the same keep the order of their first occurrences. Only the findings are kept,
// not the occurrences.
type merger struct {
	snap  *model.Snapshot
	ign   *ignorer
	byKey map[cause]*acc
}

// at is where an occurrence came: its batch, and its place in the batch.
type at struct{ batch, i int }

func (a at) before(b at) bool { return a.batch < b.batch || a.batch == b.batch && a.i < b.i }

// acc is one finding being merged.
type acc struct {
	// first is the first occurrence, its diagnostic and the subject of its answer.
	first   at
	d       explain.Diagnostic
	subject *provenance.Ref
	// hosts, clients, workloads and messages are those of the occurrences listed: once one
	// occurrence is not silenced (live), only those not silenced. The clients are kept as the
	// lists the occurrences share, set apart when the finding is made: a finding of a host
	// lists the clients of every class that sees it alike, one list per class.
	hosts, workloads, waypoints, messages map[string]bool
	clients                               [][]string
	live                                  bool
	// lastMessage is the message last added to messages.
	lastMessage string
	// reason is that of the first silenced occurrence, at reasonAt.
	reason   string
	reasonAt at
}

func newMerger(snap *model.Snapshot, ign *ignorer) *merger {
	return &merger{snap: snap, ign: ign, byKey: map[cause]*acc{}}
}

// add merges the occurrences of batch.
func (m *merger) add(batch int, occ []occurrence) {
	for i, o := range occ {
		p := at{batch, i}
		var k cause
		if o.key != nil {
			k = *o.key
		} else {
			k = causeOf(*o.d)
		}
		a := m.byKey[k]
		if a == nil {
			a = &acc{first: p, d: *o.d, subject: o.subject, hosts: map[string]bool{}, workloads: map[string]bool{}, waypoints: map[string]bool{}, messages: map[string]bool{}}
			m.byKey[k] = a
		} else if p.before(a.first) {
			a.first, a.d, a.subject = p, *o.d, o.subject
		}
		why := m.ign.reason(o.d, o.subject)
		if why != "" {
			if a.reason == "" || p.before(a.reasonAt) {
				a.reason, a.reasonAt = why, p
			}
			if a.live {
				continue
			}
		} else if !a.live {
			// The first occurrence not silenced: the finding lists only such occurrences.
			a.live = true
			clear(a.hosts)
			a.clients = nil
			clear(a.workloads)
			clear(a.waypoints)
			clear(a.messages)
		}
		if len(a.messages) == 0 || o.d.Message != a.lastMessage {
			// Most occurrences of a finding share its first message.
			a.messages[o.d.Message], a.lastMessage = true, o.d.Message
		}
		if o.host != "" {
			a.hosts[o.host] = true
		}
		if len(o.clients) > 0 {
			a.clients = append(a.clients, o.clients)
		}
		if o.workload != "" {
			a.workloads[o.workload] = true
		}
		if o.waypoint != "" {
			a.waypoints[o.waypoint] = true
		}
	}
}

// findings are the findings of every occurrence added, sorted.
func (m *merger) findings() []explain.Finding {
	accs := slices.Collect(maps.Values(m.byKey))
	slices.SortFunc(accs, func(a, b *acc) int {
		return cmp.Or(cmp.Compare(a.first.batch, b.first.batch), cmp.Compare(a.first.i, b.first.i))
	})
	// Locating a finding read from a file parses its object's document (the first time it is
	// asked): the findings are made on every core.
	out := make([]explain.Finding, len(accs))
	parallel.Each(len(accs), func(i int) {
		a, f := accs[i], &out[i]
		f.Diagnostic = a.d
		locate(m.snap, f, a.subject)
		if !a.live {
			f.Ignored = a.reason
		}
		f.Hosts = sortedSet(a.hosts)
		f.Clients = sortedUnion(a.clients)
		f.Workloads = sortedSet(a.workloads)
		f.Waypoints = sortedSet(a.waypoints)
		if msgs := sortedSet(a.messages); len(msgs) > 0 {
			f.Message, f.Details = msgs[0], msgs[1:]
			if len(f.Details) == 0 {
				f.Details = nil
			}
		}
	})
	SortFindings(out)
	return out
}

// SortFindings orders findings by severity, ID, the resource to change, then message.
func SortFindings(fs []explain.Finding) {
	// The resource of each finding is spelled once, not at every comparison, and the sort
	// moves indexes rather than findings.
	res := make([]string, len(fs))
	order := make([]int, len(fs))
	for i, f := range fs {
		res[i], order[i] = refString(f.Resource), i
	}
	slices.SortStableFunc(order, func(i, j int) int {
		a, b := &fs[i], &fs[j]
		return cmp.Or(cmp.Compare(a.Severity.Rank(), b.Severity.Rank()), diag.CompareIDs(a.ID, b.ID),
			cmp.Compare(res[i], res[j]), cmp.Compare(a.Message, b.Message), cmp.Compare(a.Fix, b.Fix))
	})
	sorted := make([]explain.Finding, len(fs))
	for k, i := range order {
		sorted[k] = fs[i]
	}
	copy(fs, sorted)
}

func refString(r *provenance.Ref) string {
	if r == nil {
		return ""
	}
	return r.String()
}

// sortedUnion is the strings of lists, sorted, each once.
func sortedUnion(lists [][]string) []string {
	n := 0
	for _, l := range lists {
		n += len(l)
	}
	if n == 0 {
		return nil
	}
	out := make([]string, 0, n)
	for _, l := range lists {
		out = append(out, l...)
	}
	slices.Sort(out)
	return slices.Clip(slices.Compact(out))
}

func sortedSet(m map[string]bool) []string {
	if len(m) == 0 {
		return nil
	}
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
