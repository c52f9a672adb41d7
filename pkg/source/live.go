package source

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	istioclient "istio.io/client-go/pkg/clientset/versioned"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/model"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/provenance"
)

// pageSize is the Limit of every list request; longer lists are read page by page.
const pageSize = 500

// maxConcurrentReads bounds the requests in flight at once.
const maxConcurrentReads = 4

// clients reach one cluster. Only get and list are ever called, and never on Secrets.
type clients struct {
	kube  kubernetes.Interface
	istio istioclient.Interface
	// host is the API server address, for connection errors.
	host string
	// user is the user name the kubeconfig names, if any, for forbidden messages.
	user string
	// timeout is the request timeout in force, for the messages of requests that exceed it.
	timeout  time.Duration
	warnings *warningCollector
	// answers is the guard's count of the responses the API server sent, nil without a guard
	// (fake clientsets).
	answers *atomic.Int64
	// served are the versions each Istio group serves, once discovered (servedVersion).
	discoveryMu sync.Mutex
	served      map[string][]string
	// ruleInFull is Spec.DestinationRuleInFull of the load, vsNeeded its VirtualServiceNeeded.
	ruleInFull func(namespace, host string) bool
	vsNeeded   func(listed []byte) bool
}

// newClients builds the clientsets from the kubeconfig the getter resolves (--kubeconfig,
// --context, --request-timeout, impersonation...). client-go's default rate limit (5 QPS) would
// throttle a dozen concurrent lists, so an unset limit is raised to kubectl's discovery level.
// An unset request timeout is DefaultRequestTimeout, and every response goes through the guard
// (its size and the Retry-Afters honoured are bounded).
func newClients(g genericclioptions.RESTClientGetter) (*clients, error) {
	cfg, err := g.ToRESTConfig()
	if err != nil {
		return nil, err
	}
	cfg = rest.CopyConfig(cfg)
	if cfg.QPS == 0 {
		cfg.QPS = 50
	}
	if cfg.Burst == 0 {
		cfg.Burst = 100
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultRequestTimeout
	}
	answers := &atomic.Int64{}
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return newGuard(rt, answers) })
	w := &warningCollector{}
	cfg.WarningHandler = w
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	istio, err := istioclient.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	user := cfg.Impersonate.UserName
	if user == "" {
		user = cfg.Username
	}
	return &clients{kube: kube, istio: istio, host: hostOf(cfg.Host), user: user, timeout: cfg.Timeout, warnings: w, answers: answers}, nil
}

// warningCollector keeps the API server's warnings (deprecations, ...) for the load issues
// instead of letting client-go print them.
type warningCollector struct {
	mu   sync.Mutex
	msgs []string
}

func (w *warningCollector) HandleWarningHeader(code int, _ string, text string) {
	if code != 299 || text == "" {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if !slices.Contains(w.msgs, text) {
		w.msgs = append(w.msgs, text)
	}
}

// readTask is one request: a list of a kind in a namespace, a get of one Namespace or Node, or
// the get of the mesh ConfigMap.
type readTask struct {
	kind *kindInfo
	// ns is the namespace listed ("" for all), or the object name for a get of a
	// cluster-scoped kind.
	ns string
	// name is the object a get of a namespaced kind reads, in ns.
	name string
	// selector, for a list in every namespace, is the label selector of the objects listed
	// (Read.Labeled).
	selector string
	get      bool
	mesh     bool

	// version is the version an Istio kind was read at when the cluster does not serve its own.
	version string

	objs []object
	cm   *corev1.ConfigMap
	err  error
	done time.Time
}

// unanswered returns the first read in time when every read failed without an answer from the
// API server (no Status: timeouts, dropped connections), else nil.
func unanswered(tasks []*readTask) *readTask {
	var first *readTask
	for _, t := range tasks {
		if t.err == nil || apiStatus(t.err) {
			return nil
		}
		if first == nil || t.done.Before(first.done) {
			first = t
		}
	}
	return first
}

// readLive reads spec.Reads and the mesh ConfigMap, concurrently. A load that adds to an
// earlier one (Supplement), or reads nothing but Nodes (the nodes of pods an earlier load
// found), does not read the mesh ConfigMap again.
func (l *loader) readLive(ctx context.Context, c *clients) error {
	tasks, err := planReads(l.spec.Reads)
	if err != nil {
		return err
	}
	if !l.spec.Supplement && (len(l.spec.Reads) == 0 || slices.ContainsFunc(l.spec.Reads, func(r Read) bool { return r.Kind != KindNode })) {
		tasks = append(tasks, &readTask{mesh: true})
	}

	// A read that fails on its own (forbidden, throttled, timed out, cut off) leaves its kind
	// incomplete and the others go on. Only a failure that every other read would meet too
	// (the cluster cannot be reached, the credentials are refused) stops them: the first such
	// failure in time is the one reported, and the reads it cancels are not failures.
	parent := ctx
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sem := make(chan struct{}, maxConcurrentReads)
	var (
		wg            sync.WaitGroup
		mu            sync.Mutex
		first         *readTask
		done, objects atomic.Int64
	)
	for _, t := range tasks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			if ctx.Err() != nil {
				t.err = ctx.Err()
				return
			}
			l.runSafely(ctx, c, t)
			t.done = time.Now()
			if l.spec.Progress != nil {
				l.spec.Progress(Progress{Done: int(done.Add(1)), Total: len(tasks), Objects: int(objects.Add(int64(len(t.objs))))})
			}
			if fatal(t.err) || c.silent(t.err) {
				mu.Lock()
				if first == nil && ctx.Err() == nil {
					first = t
					cancel()
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()

	switch {
	case parent.Err() != nil:
		return clusterErr(parent.Err(), c.host)
	case first != nil:
		return clusterErr(first.err, c.host)
	}
	if failed := unanswered(tasks); failed != nil {
		// Not one read got an answer from the API server: the cluster is not there to read.
		return clusterErr(failed.err, c.host)
	}

	// The maps the objects go into are made for all of them at once (a live read is most of
	// what a command holds).
	n := 0
	for _, t := range tasks {
		n += len(t.objs)
	}
	if len(l.objs) == 0 && n > 0 {
		l.objs, l.sources = make(map[model.ObjectKey]object, n), make(map[model.ObjectKey]model.Source, n)
	}
	missing := map[string]bool{}
	versionSaid := map[string]bool{}
	var nodesFailed []*readTask
	for _, t := range tasks {
		switch {
		case t.mesh:
			l.meshResult(c, t)
		case t.err == nil:
			for _, o := range t.objs {
				l.addLiveObject(t.kind, o)
			}
			if t.version != "" && !versionSaid[t.kind.kind] {
				versionSaid[t.kind.kind] = true
				l.issue(model.LoadIssue{Severity: "warning", Message: fmt.Sprintf(
					"%s were read at %s/%s: the cluster does not serve %s (Istio before 1.22 serves v1beta1)",
					plural(t.kind.kind), t.kind.group, t.version, t.kind.apiVersion())})
			}
		case t.kind.istio && !t.get && crdMissing(t.err):
			missing[t.kind.kind] = true
		case t.kind.kind == KindGateway && crdMissing(t.err):
			// No Gateway API, no waypoint: nothing is missing from the answer.
			l.absent[KindGateway] = "the Gateway API CRDs are not installed in this cluster"
		case t.kind.kind == KindNode:
			nodesFailed = append(nodesFailed, t)
		default:
			l.readFailed(c, t)
		}
	}
	l.nodeReadsFailed(c, nodesFailed)
	if err := l.missingCRDs(missing); err != nil {
		return err
	}
	if c.warnings != nil {
		for _, w := range c.warnings.msgs {
			l.issue(model.LoadIssue{Severity: "warning", Message: "the API server warned: " + w})
		}
	}
	return nil
}

// planReads turns Reads into requests, one per kind and namespace (or name, for a
// cluster-scoped kind read by name, and for the names a Read gets in a namespace no Read of
// the kind lists), in Kinds() order. A kind that cannot be listed (Node) is read only by name:
// a Read of it without names reads nothing.
func planReads(reads []Read) ([]*readTask, error) {
	for _, r := range reads {
		ki := kindByName(r.Kind)
		if ki == nil {
			return nil, fmt.Errorf("cannot read kind %q (known kinds: %s)", r.Kind, strings.Join(Kinds(), ", "))
		}
		if r.Names != nil && ki.getIn == nil {
			return nil, fmt.Errorf("cannot read %s by name in a namespace", r.Kind)
		}
	}
	scopes := readScopes(reads)
	var tasks []*readTask
	for _, ki := range kindTable {
		sc, ok := scopes[ki.kind]
		if !ok {
			continue
		}
		if sc.all && ki.list != nil {
			tasks = append(tasks, &readTask{kind: ki})
			continue
		}
		nss := slices.Sorted(maps.Keys(sc.namespaces))
		for _, ns := range nss {
			tasks = append(tasks, &readTask{kind: ki, ns: ns, get: ki.cluster})
		}
		if sc.all {
			continue
		}
		if ki.list != nil {
			for _, key := range sc.labeled {
				tasks = append(tasks, &readTask{kind: ki, selector: key})
			}
			for _, ns := range slices.Sorted(maps.Keys(sc.nsLabeled)) {
				if sc.namespaces[ns] {
					continue
				}
				for _, key := range sc.nsLabeled[ns] {
					if !slices.Contains(sc.labeled, key) {
						tasks = append(tasks, &readTask{kind: ki, ns: ns, selector: key})
					}
				}
			}
		}
		for _, ns := range slices.Sorted(maps.Keys(sc.names)) {
			if sc.namespaces[ns] {
				continue
			}
			for _, name := range slices.Sorted(maps.Keys(sc.names[ns])) {
				tasks = append(tasks, &readTask{kind: ki, ns: ns, name: name, get: true})
			}
		}
	}
	return tasks, nil
}

// runSafely is run on a read's goroutine, where a panic would end the process: it is
// recovered as the read's error, so the kind is reported as not read and the rest is explained.
func (l *loader) runSafely(ctx context.Context, c *clients, t *readTask) {
	defer func() {
		if r := recover(); r != nil {
			t.objs, t.cm, t.err = nil, nil, fmt.Errorf("internal error: %v", r)
		}
	}()
	if testHookRun != nil {
		testHookRun(t)
	}
	l.run(ctx, c, t)
}

// testHookRun, when set, is called with each read before it is made; tests use it to make a
// read panic.
var testHookRun func(t *readTask)

func (l *loader) run(ctx context.Context, c *clients, t *readTask) {
	switch {
	case t.mesh:
		cm, err := c.kube.CoreV1().ConfigMaps(l.spec.IstioNamespace).Get(ctx, MeshConfigMapName(l.spec.Revision), metav1.GetOptions{})
		switch {
		case err == nil:
			t.cm = cm
		case apierrors.IsNotFound(err):
		default:
			t.err = err
		}
	case t.get:
		var o object
		var err error
		if t.name != "" {
			o, err = t.kind.getIn(ctx, c, t.ns, t.name)
		} else {
			o, err = t.kind.get(ctx, c, t.ns)
		}
		switch {
		case err == nil:
			t.objs = []object{o}
		case apierrors.IsNotFound(err):
		default:
			t.err = err
		}
	default:
		t.objs, t.err = listAll(ctx, c, t.kind, t.ns, t.selector, "")
		if t.err != nil && t.kind.istio && crdMissing(t.err) {
			// Istio before 1.22 serves its kinds at v1beta1 (networking also at v1alpha3).
			if v := c.servedVersion(ctx, t.kind); v != "" {
				t.version = v
				t.objs, t.err = listAll(ctx, c, t.kind, t.ns, t.selector, v)
			}
		}
	}
}

func (l *loader) addLiveObject(ki *kindInfo, o object) {
	if p, ok := o.(*corev1.Pod); ok {
		SlimPod(p)
	}
	o.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{Group: ki.group, Version: ki.versions[0], Kind: ki.kind})
	ns := o.GetNamespace()
	if ki.cluster {
		ns = ""
	}
	key := model.ObjectKey{Kind: ki.kind, Namespace: ns, Name: o.GetName()}
	l.objs[key] = o
	l.sources[key] = model.Source{Live: true, ResourceVersion: o.GetResourceVersion()}
}

func (l *loader) meshResult(c *clients, t *readTask) {
	name := MeshConfigMapName(l.spec.Revision)
	if t.err != nil {
		msg := fmt.Sprintf("%s; istiod's default MeshConfig is assumed", readFailure(c, t.err, "get", "configmaps/"+name, l.spec.IstioNamespace))
		l.incomplete["MeshConfig"] = msg
		l.issue(model.LoadIssue{
			Severity: "warning", Resource: &provenance.Ref{Kind: kindConfigMap, Namespace: l.spec.IstioNamespace, Name: name},
			Message: msg, Incomplete: []string{"MeshConfig"},
		})
		return
	}
	if t.cm == nil {
		return
	}
	y, ok := t.cm.Data[MeshConfigKey]
	l.liveMesh = &meshInput{yaml: y, hasKey: ok, ref: provenance.Ref{Kind: kindConfigMap, Namespace: t.cm.Namespace, Name: t.cm.Name}}
	if l.liveMesh.ref.Namespace == "" {
		l.liveMesh.ref.Namespace = l.spec.IstioNamespace
	}
}

// readFailed records a read that was denied or failed: the kind is incomplete.
func (l *loader) readFailed(c *clients, t *readTask) {
	verb, what, where := "list", t.kind.qualifiedResource(), t.ns
	switch {
	case t.name != "":
		verb, what = "get", t.kind.qualifiedResource()+"/"+t.name
	case t.get:
		verb, what, where = "get", t.kind.qualifiedResource()+"/"+t.ns, "-"
	case t.kind.cluster:
		where = "-"
	case t.selector != "":
		what += " labelled " + t.selector
	}
	msg := readFailure(c, t.err, verb, what, where)
	l.issue(model.LoadIssue{Severity: "warning", Message: msg, Incomplete: []string{t.kind.kind}})
	if prev, ok := l.incomplete[t.kind.kind]; ok {
		msg = prev + "; " + msg
	}
	l.incomplete[t.kind.kind] = msg
}

// nodeReadsFailed records the Node gets that were denied or failed: the locality of the pods on
// those nodes is unknown. The gets refused to one user make one warning
// (`forbidden: alice cannot get nodes/a, nodes/b; ...`); any other failure is reported per node.
func (l *loader) nodeReadsFailed(c *clients, failed []*readTask) {
	var msgs []string
	forbidden := map[string][]string{}
	for _, t := range failed {
		if !apierrors.IsForbidden(t.err) {
			msgs = append(msgs, readFailure(c, t.err, "get", t.kind.resource+"/"+t.ns, "-")+
				"; locality unknown for the pods on that node")
			continue
		}
		// deniedMessage names the user from the error, so the prefix separates users.
		prefix := readFailure(c, t.err, "get", t.kind.resource, "-")
		if _, ok := forbidden[prefix]; !ok {
			msgs = append(msgs, prefix)
		}
		forbidden[prefix] = append(forbidden[prefix], t.kind.resource+"/"+t.ns)
	}
	for _, msg := range msgs {
		if names, ok := forbidden[msg]; ok {
			msg = strings.TrimSuffix(msg, "nodes") + strings.Join(names, ", ")
			if len(names) == 1 {
				msg += "; locality unknown for the pods on that node"
			} else {
				msg += "; locality unknown for the pods on those nodes"
			}
		}
		l.issue(model.LoadIssue{Severity: "warning", Message: msg, Incomplete: []string{KindNode}})
		if prev, ok := l.incomplete[KindNode]; ok {
			msg = prev + "; " + msg
		}
		l.incomplete[KindNode] = msg
	}
}

var forbiddenUserRE = regexp.MustCompile(`User "([^"]*)" cannot`)

// crdMissing is true when a list failed because the resource does not exist: the CRD is not
// installed (the API server answers 404 for the resource, or discovery has no match).
func crdMissing(err error) bool {
	return apierrors.IsNotFound(err) || meta.IsNoMatchError(err)
}

// missingCRDs turns the Istio kinds whose CRDs are missing into one warning, or into an error
// when no Istio kind could be read at all.
func (l *loader) missingCRDs(missing map[string]bool) error {
	if len(missing) == 0 {
		return nil
	}
	requested := 0
	for _, r := range uniqueKinds(l.spec.Reads) {
		if kindByName(r).istio {
			requested++
		}
	}
	kinds := make([]string, 0, len(missing))
	for k := range missing {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	if len(kinds) == requested {
		return errors.New("the Istio CRDs are not installed in this cluster (install Istio, or pass -f FILE to explain configuration files)")
	}
	msg := fmt.Sprintf("the Istio CRDs are not installed in this cluster: %s could not be read", strings.Join(kinds, ", "))
	for _, k := range kinds {
		l.incomplete[k] = msg
	}
	l.issue(model.LoadIssue{Severity: "warning", Message: msg, Incomplete: kinds})
	return nil
}

func uniqueKinds(reads []Read) []string {
	var out []string
	for _, r := range reads {
		if !slices.Contains(out, r.Kind) {
			out = append(out, r.Kind)
		}
	}
	return out
}
