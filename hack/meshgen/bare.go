package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/plan"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/source"
)

// BareUserAgent is the User-Agent of the bare reads, so the API server's audit log tells them
// from the plugin's.
const BareUserAgent = "meshgen-bare-reads"

// The Accept headers client-go sends: built-in kinds prefer protobuf (gentype.PrefersProtobuf),
// Istio's clientset asks for JSON (its rest config leaves ContentType to the JSON default).
const (
	acceptProtobuf = "application/vnd.kubernetes.protobuf,application/json"
	acceptJSON     = "application/json, */*"
)

// The constants of the plugin's loader (pkg/source/live.go) the bare reads mirror.
const (
	pageSize           = 500
	maxConcurrentReads = 4
)

// bareKind is one kind the plugin reads, as a REST resource.
type bareKind struct {
	kind     string
	prefix   string // /api/v1, /apis/networking.istio.io/v1, ...
	resource string
	cluster  bool
	accept   string
}

// bareKinds is pkg/source's kindTable, in its order.
var bareKinds = []bareKind{
	{"Namespace", "/api/v1", "namespaces", true, acceptProtobuf},
	{"Service", "/api/v1", "services", false, acceptProtobuf},
	{"Pod", "/api/v1", "pods", false, acceptProtobuf},
	{"Deployment", "/apis/apps/v1", "deployments", false, acceptProtobuf},
	{"ServiceEntry", "/apis/networking.istio.io/v1", "serviceentries", false, acceptJSON},
	{"WorkloadEntry", "/apis/networking.istio.io/v1", "workloadentries", false, acceptJSON},
	{"DestinationRule", "/apis/networking.istio.io/v1", "destinationrules", false, acceptJSON},
	{"VirtualService", "/apis/networking.istio.io/v1", "virtualservices", false, acceptJSON},
	{"Sidecar", "/apis/networking.istio.io/v1", "sidecars", false, acceptJSON},
	{"EnvoyFilter", "/apis/networking.istio.io/v1alpha3", "envoyfilters", false, acceptJSON},
	{"PeerAuthentication", "/apis/security.istio.io/v1", "peerauthentications", false, acceptJSON},
	{"RequestAuthentication", "/apis/security.istio.io/v1", "requestauthentications", false, acceptJSON},
	{"AuthorizationPolicy", "/apis/security.istio.io/v1", "authorizationpolicies", false, acceptJSON},
	{"Gateway", "/apis/gateway.networking.k8s.io/v1", "gateways", false, acceptJSON},
}

// pluginArgs is the part of a plugin command line that decides its reads.
type pluginArgs struct {
	verb, target, namespace, from, selector, istioNamespace string
	// allNamespaces is -A (check).
	allNamespaces bool
}

// parsePluginArgs reads a `cluster HOST ...`, `authz pod/NAME ...`, `authz waypoint/NAME ...` or
// `check [-A] ...` command line.
func parsePluginArgs(args []string) (pluginArgs, error) {
	a := pluginArgs{istioNamespace: "istio-system"}
	var pos []string
	for i := 0; i < len(args); i++ {
		name, val, hasVal := strings.Cut(args[i], "=")
		next := func() (string, error) {
			if hasVal {
				return val, nil
			}
			if i+1 >= len(args) {
				return "", fmt.Errorf("flag %s needs a value", name)
			}
			i++
			return args[i], nil
		}
		var err error
		switch name {
		case "-n", "--namespace":
			a.namespace, err = next()
		case "--from":
			a.from, err = next()
		case "-l", "--selector":
			a.selector, err = next()
		case "--istio-namespace":
			a.istioNamespace, err = next()
		case "-A", "--all-namespaces":
			a.allNamespaces = true
		case "--port", "--subset", "-o", "--output", "--kubeconfig", "--context", "--fail-on", "--ignore":
			_, err = next()
		default:
			if strings.HasPrefix(name, "-") {
				return a, fmt.Errorf("the bare reads do not know the flag %s", name)
			}
			pos = append(pos, args[i])
		}
		if err != nil {
			return a, err
		}
	}
	if len(pos) == 0 {
		return a, errors.New("want cluster HOST, authz pod/NAME, authz waypoint/NAME or check")
	}
	a.verb = pos[0]
	if len(pos) > 1 {
		a.target = pos[1]
	}
	if a.namespace == "" {
		a.namespace = "default"
	}
	return a, nil
}

// planFor returns the reads the plugin plans for a command line, from the plugin's own plan
// (pkg/plan Cluster.Reads, Authz.Reads, Waypoint.Reads and Check.Reads), for a cluster whose mesh ConfigMap names
// --istio-namespace as the root namespace (the generated mesh does).
func planFor(a pluginArgs) ([]source.Read, error) {
	root := a.istioNamespace
	switch a.verb {
	case "cluster":
		host, _, _ := strings.Cut(strings.ToLower(a.target), ":")
		q := plan.ClusterQuery{Host: host, Namespace: a.namespace, ClientNamespace: a.namespace}
		if kind, name, ok := strings.Cut(a.from, "/"); ok {
			switch kind {
			case "pod", "pods", "po":
				q.ClientPod = name
			case "namespace", "namespaces", "ns":
				q.ClientNamespace = name
			}
		}
		return plan.NewCluster(q, source.Spec{}, root, true, false).Reads(), nil
	case "authz":
		if kind, name, ok := strings.Cut(a.target, "/"); ok && a.selector == "" && (kind == "waypoint" || kind == "waypoints") {
			// The plan reads again only for namespaces whose labels bind them to the waypoint
			// from elsewhere, a Gateway that lets other namespaces bind, ext_authz providers in
			// other namespaces or another root namespace: the generated mesh has none, so its
			// first reads are its last.
			return plan.NewWaypoint(a.namespace, name, source.Spec{}, root, true).Reads(), nil
		}
		q := plan.AuthzQuery{Namespace: a.namespace, Selector: a.selector}
		if kind, name, ok := strings.Cut(a.target, "/"); ok && a.selector == "" {
			switch kind {
			case "pod", "pods", "po":
				q.Kind, q.Name = "pod", name
			case "deployment", "deployments", "deploy":
				q.Kind, q.Name = "deployment", name
			}
		}
		return plan.NewAuthz(q, source.Spec{}, root, true).Reads(), nil
	case "check":
		var namespaces []string
		if !a.allNamespaces {
			namespaces = []string{a.namespace}
		}
		return plan.NewCheck(namespaces, source.Spec{}, root, true).Reads(), nil
	}
	return nil, fmt.Errorf("unknown command %q (want cluster, authz or check)", a.verb)
}

// sortedNames is a sorted, de-duplicated list without empty names.
func sortedNames(names ...string) []string {
	out := []string{}
	for _, n := range names {
		if n != "" {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// bareTask is one request sequence: the pages of a list, or one get.
type bareTask struct {
	kind bareKind
	path string
	get  bool
	// selector is the label selector of a list (source.Read Labeled).
	selector string

	requests int
	bytes    int64
	status   []int
	err      error
}

// tasksFor turns reads into requests the way pkg/source planReads does: one task per kind and
// namespace in kind-table order, a get per named Namespace, a get per name in a namespace no
// read of the kind lists, then the get of the mesh ConfigMap and the list of istiod Deployments.
func tasksFor(reads []source.Read, istioNamespace string) []*bareTask {
	tasks := kindTasks(reads)
	cm := bareKind{kind: "ConfigMap", prefix: "/api/v1", resource: "configmaps", accept: acceptProtobuf}
	tasks = append(tasks, &bareTask{kind: cm, path: "/api/v1/namespaces/" + istioNamespace + "/configmaps/istio", get: true})
	// Beside its reads, a live command lists the istiod Deployments by label, in one request
	// (pkg/cli withIstiodCheck, listIstiods), to warn about another Istio version.
	deploy := bareKind{kind: "Deployment", prefix: "/apis/apps/v1", resource: "deployments", accept: acceptProtobuf}
	tasks = append(tasks, &bareTask{kind: deploy, path: "/apis/apps/v1/namespaces/" + istioNamespace + "/deployments?labelSelector=app%3Distiod", get: true})
	return tasks
}

// kindTasks are the requests of reads alone.
func kindTasks(reads []source.Read) []*bareTask {
	nss := map[string][]string{}
	names := map[string]map[string][]string{}
	all := map[string]bool{}
	labeled := map[string][]string{}
	nsLabeled := map[string]map[string][]string{}
	for _, r := range reads {
		switch {
		case r.Namespaces == nil && r.Labeled != "":
			if !slices.Contains(labeled[r.Kind], r.Labeled) {
				labeled[r.Kind] = append(labeled[r.Kind], r.Labeled)
			}
		case r.Labeled != "":
			for _, ns := range r.Namespaces {
				if nsLabeled[r.Kind] == nil {
					nsLabeled[r.Kind] = map[string][]string{}
				}
				if !slices.Contains(nsLabeled[r.Kind][ns], r.Labeled) {
					nsLabeled[r.Kind][ns] = append(nsLabeled[r.Kind][ns], r.Labeled)
				}
			}
		case r.Namespaces == nil:
			all[r.Kind] = true
		case r.Names != nil:
			for _, ns := range r.Namespaces {
				if names[r.Kind] == nil {
					names[r.Kind] = map[string][]string{}
				}
				names[r.Kind][ns] = append(names[r.Kind][ns], r.Names...)
			}
		default:
			nss[r.Kind] = append(nss[r.Kind], r.Namespaces...)
		}
	}
	var tasks []*bareTask
	for _, k := range bareKinds {
		list, listed := nss[k.kind]
		if _, named := names[k.kind]; !listed && !named && !all[k.kind] && labeled[k.kind] == nil && nsLabeled[k.kind] == nil {
			continue
		}
		if all[k.kind] {
			tasks = append(tasks, &bareTask{kind: k, path: k.prefix + "/" + k.resource})
			continue
		}
		slices.Sort(list)
		list = slices.Compact(list)
		for _, ns := range list {
			if ns == "" {
				continue
			}
			if k.cluster {
				tasks = append(tasks, &bareTask{kind: k, path: k.prefix + "/" + k.resource + "/" + ns, get: true})
				continue
			}
			tasks = append(tasks, &bareTask{kind: k, path: k.prefix + "/namespaces/" + ns + "/" + k.resource})
		}
		for _, key := range labeled[k.kind] {
			tasks = append(tasks, &bareTask{kind: k, path: k.prefix + "/" + k.resource, selector: key})
		}
		for _, ns := range slices.Sorted(maps.Keys(nsLabeled[k.kind])) {
			if ns == "" || slices.Contains(list, ns) {
				continue
			}
			for _, key := range nsLabeled[k.kind][ns] {
				if !slices.Contains(labeled[k.kind], key) {
					tasks = append(tasks, &bareTask{kind: k, path: k.prefix + "/namespaces/" + ns + "/" + k.resource, selector: key})
				}
			}
		}
		for _, ns := range slices.Sorted(maps.Keys(names[k.kind])) {
			if ns == "" || slices.Contains(list, ns) {
				continue
			}
			for _, name := range sortedNames(names[k.kind][ns]...) {
				tasks = append(tasks, &bareTask{kind: k, path: k.prefix + "/namespaces/" + ns + "/" + k.resource + "/" + name, get: true})
			}
		}
	}
	return tasks
}

// BareResult is what `meshgen bare-reads` prints.
type BareResult struct {
	Requests int   `json:"requests"`
	Bytes    int64 `json:"bytes"`
	// ReadNanos is the time of the reads alone, from the first request to the last byte.
	ReadNanos int64 `json:"readNanos"`
	// Paths are the request paths, in plan order.
	Paths []string `json:"paths"`
}

// bareReads runs `meshgen bare-reads --kubeconfig FILE [--node NAME]... [--service NS/NAME]...
// [--services NS]... [--pods NS]... -- COMMAND...`.
func bareReads(args []string) error {
	fs := flag.NewFlagSet("bare-reads", flag.ContinueOnError)
	kubeconfig := fs.String("kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig of the cluster to read")
	var nodes, services, serviceLists, podLists stringList
	fs.Var(&nodes, "node", "a Node `cluster` gets once it knows the pods (repeatable): the bare reads do not decode the pods, so they are told")
	fs.Var(&services, "service", "a Service NS/NAME `cluster` gets in its second phase (repeatable; pkg/plan Cluster.NearMissReads)")
	fs.Var(&serviceLists, "services", "a namespace whose Services `cluster` lists in its second phase (repeatable)")
	fs.Var(&podLists, "pods", "a namespace whose Pods `cluster` lists in its second phase (repeatable; pkg/plan Cluster.SelectorPodReads)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	pa, err := parsePluginArgs(fs.Args())
	if err != nil {
		return err
	}
	reads, err := planFor(pa)
	if err != nil {
		return err
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		return err
	}
	cfg.UserAgent = BareUserAgent
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return err
	}
	base := strings.TrimSuffix(cfg.Host, "/")

	// The plugin reads in two phases: the planned kinds and the mesh ConfigMap, then (cluster
	// only) the Nodes of the pods that matter, one get each, and the Services DestinationRules
	// name near the host (pkg/plan Cluster.Load).
	phases := [][]*bareTask{tasksFor(reads, pa.istioNamespace)}
	var second []*bareTask
	if len(nodes) > 0 {
		node := bareKind{kind: "Node", prefix: "/api/v1", resource: "nodes", cluster: true, accept: acceptProtobuf}
		for _, n := range sortedNames(nodes...) {
			second = append(second, &bareTask{kind: node, path: "/api/v1/nodes/" + n, get: true})
		}
	}
	// The Services the plugin gets (or lists) in the same phase, for the DestinationRules
	// named near the host.
	var more []source.Read
	for _, s := range services {
		ns, name, _ := strings.Cut(s, "/")
		more = append(more, source.Read{Kind: source.KindService, Namespaces: []string{ns}, Names: []string{name}})
	}
	for _, ns := range serviceLists {
		more = append(more, source.Read{Kind: source.KindService, Namespaces: []string{ns}})
	}
	for _, ns := range podLists {
		more = append(more, source.Read{Kind: source.KindPod, Namespaces: []string{ns}})
	}
	second = append(second, kindTasks(more)...)
	if len(second) > 0 {
		phases = append(phases, second)
	}
	start := time.Now()
	res := BareResult{}
	for _, tasks := range phases {
		if err := runTasks(hc, base, tasks); err != nil {
			return err
		}
		for _, t := range tasks {
			res.Requests += t.requests
			res.Bytes += t.bytes
			res.Paths = append(res.Paths, t.path)
		}
	}
	res.ReadNanos = time.Since(start).Nanoseconds()
	return json.NewEncoder(os.Stdout).Encode(res)
}

// runTasks runs tasks concurrently, at most maxConcurrentReads at a time, as the loader does.
func runTasks(hc *http.Client, base string, tasks []*bareTask) error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sem := make(chan struct{}, maxConcurrentReads)
	var wg sync.WaitGroup
	for _, t := range tasks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			t.err = t.run(ctx, hc, base)
			if t.err != nil {
				cancel()
			}
		}()
	}
	wg.Wait()
	for _, t := range tasks {
		if t.err != nil {
			return fmt.Errorf("GET %s: %w", t.path, t.err)
		}
	}
	return nil
}

// run issues the task's requests: a get, or every page of a list, discarding the bodies but
// the continue token.
func (t *bareTask) run(ctx context.Context, hc *http.Client, base string) error {
	cont := ""
	for {
		u := base + t.path
		if !t.get {
			q := url.Values{}
			q.Set("limit", fmt.Sprint(pageSize))
			if t.selector != "" {
				q.Set("labelSelector", t.selector)
			}
			if cont != "" {
				q.Set("continue", cont)
			}
			u += "?" + q.Encode()
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			return err
		}
		req.Header.Set("Accept", t.kind.accept)
		resp, err := hc.Do(req)
		if err != nil {
			return err
		}
		next, n, err := drain(resp.Body, resp.Header.Get("Content-Type"))
		resp.Body.Close()
		t.requests++
		t.bytes += n
		t.status = append(t.status, resp.StatusCode)
		switch {
		case err != nil:
			return err
		case resp.StatusCode == http.StatusNotFound && t.get:
			// The plugin reads a missing Namespace, Node or mesh ConfigMap as absent.
			return nil
		case resp.StatusCode != http.StatusOK:
			return fmt.Errorf("status %d", resp.StatusCode)
		}
		if t.get || next == "" {
			return nil
		}
		cont = next
	}
}

// keepSize is how much of the start and of the end of a body is kept to find a list's continue
// token: built-in kinds write the list metadata before the items, custom resources (written
// with their keys in alphabetical order) after them.
const keepSize = 4096

// tail keeps the last keepSize bytes written to it.
type tail struct {
	buf []byte
	n   int64
}

func (t *tail) Write(p []byte) (int, error) {
	t.n += int64(len(p))
	t.buf = append(t.buf, p...)
	if len(t.buf) > 2*keepSize {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-keepSize:]...)
	}
	return len(p), nil
}

// drain reads a body to the end, keeping only the continue token of a list.
func drain(body io.Reader, contentType string) (string, int64, error) {
	prefix := make([]byte, keepSize)
	n, err := io.ReadFull(body, prefix)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return "", int64(n), err
	}
	prefix = prefix[:n]
	end := &tail{}
	_, err = io.Copy(end, body)
	total := int64(n) + end.n
	if err != nil {
		return "", total, err
	}
	if strings.HasPrefix(contentType, "application/vnd.kubernetes.protobuf") {
		return protobufContinue(prefix), total, nil
	}
	if end.n == 0 {
		return jsonContinue(prefix), total, nil
	}
	return jsonContinue(append(prefix, end.buf...)), total, nil
}

var continueRE = regexp.MustCompile(`"continue":"([^"]*)"`)

// jsonContinue finds metadata.continue of a JSON list in the start and end of its body: the
// list's metadata comes before "items" (built-in kinds) or after the last item (custom
// resources), and no object of an item has a key "continue" at its top level.
func jsonContinue(b []byte) string {
	head := b
	if i := bytes.Index(b, []byte(`"items":`)); i >= 0 {
		head = b[:i]
		if m := continueRE.FindSubmatch(head); m != nil {
			return string(m[1])
		}
		b = b[i:]
	}
	i := bytes.LastIndex(b, []byte(`"metadata":{`))
	if i < 0 {
		return ""
	}
	if m := continueRE.FindSubmatch(b[i:]); m != nil {
		return string(m[1])
	}
	return ""
}

// protobufContinue finds metadata.continue of a protobuf list: the body is the magic
// "k8s\x00" and a runtime.Unknown whose raw (field 2) is the list, whose field 1 is ListMeta,
// whose field 3 is continue.
func protobufContinue(b []byte) string {
	b, ok := bytes.CutPrefix(b, []byte("k8s\x00"))
	if !ok {
		return ""
	}
	raw := protoField(b, 2)
	meta := protoField(raw, 1)
	return string(protoField(meta, 3))
}

// protoField returns the bytes of the first length-delimited field num of a message, or nil.
// A truncated message (a prefix) is read as far as it goes.
func protoField(b []byte, num protowire.Number) []byte {
	for len(b) > 0 {
		n, typ, l := protowire.ConsumeTag(b)
		if l < 0 {
			return nil
		}
		b = b[l:]
		if typ == protowire.BytesType {
			v, l := protowire.ConsumeBytes(b)
			if l < 0 {
				// The field runs past the prefix: what is there is all there is.
				if n == num {
					_, vl := protowire.ConsumeVarint(b)
					if vl > 0 {
						return b[vl:]
					}
				}
				return nil
			}
			if n == num {
				return v
			}
			b = b[l:]
			continue
		}
		l = protowire.ConsumeFieldValue(n, typ, b)
		if l < 0 {
			return nil
		}
		b = b[l:]
	}
	return nil
}
