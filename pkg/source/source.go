package source

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	meshv1alpha1 "istio.io/api/mesh/v1alpha1"
	"k8s.io/cli-runtime/pkg/genericclioptions"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/model"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/provenance"
)

// DefaultIstioNamespace is where istiod and its mesh ConfigMap live unless --istio-namespace says
// otherwise.
const DefaultIstioNamespace = "istio-system"

// Spec says what to load.
type Spec struct {
	// Files are the -f arguments: files, directories, or "-" for Stdin. When set (and Overlay
	// is not), nothing is read from the cluster.
	Files []string
	// Recursive is -R: walk directories recursively.
	Recursive bool
	// Stdin is read for "-".
	Stdin io.Reader
	// Overlay is --overlay: read the cluster, then lay Files over it.
	Overlay bool
	// Getter reaches the live cluster (cli-runtime ConfigFlags honour --kubeconfig, --context,
	// --request-timeout...). Nil means files only.
	Getter genericclioptions.RESTClientGetter
	// IstioNamespace is --istio-namespace, where the mesh ConfigMap lives (default istio-system).
	IstioNamespace string
	// Revision is --revision: the mesh ConfigMap is istio-<revision>.
	Revision string
	// MeshConfigFile is --meshconfig: a raw MeshConfig YAML file that replaces the ConfigMap.
	MeshConfigFile string
	// DefaultNamespace is -n: objects in files without metadata.namespace take it (kubectl
	// semantics; default "default").
	DefaultNamespace string
	// Reads says what to read from the cluster. Files are loaded whole unless FilterFiles is
	// set.
	Reads []Read
	// FilterFiles applies Reads to the objects of Files too: a file object is kept only when
	// a cluster read planned by Reads would return it (its kind is read, in its namespace or
	// in all namespaces; a Namespace only when its name is read). A command line then gives
	// the same answer from files as from a cluster holding the same objects. The mesh
	// ConfigMap is always kept.
	FilterFiles bool
	// Progress, when set, is called as each read of the cluster ends, from the goroutine that
	// made it (calls may be concurrent).
	Progress func(Progress)
	// DestinationRuleInFull, when set, says from a live DestinationRule's namespace and
	// spec.host whether to decode the rule in full. The others are decoded in the fields their
	// lookup reads (host, exportTo, workloadSelector) and nothing else, and so are not checked
	// further. Nil decodes every rule in full; rules from Files are always decoded in full.
	DestinationRuleInFull func(namespace, host string) bool
	// VirtualServiceNeeded, when set, says from a live VirtualService's JSON, the whole object
	// as the list returns it, whether the answer can depend on it; the others are left out of
	// the snapshot without being decoded. Nil keeps every VirtualService; those from Files are
	// always kept.
	VirtualServiceNeeded func(listed []byte) bool
	// MaxInputBytes limits the size of any single input: a file, standard input, the
	// --meshconfig file (0: DefaultMaxInputBytes). A larger input ends the load.
	MaxInputBytes int64
	// Supplement marks a load that adds objects to an earlier one (a second read phase): it
	// does not read the mesh ConfigMap again.
	Supplement bool
	// Cache, when set, keeps what is read of Files across the loads that share it, so that
	// loading the same files again (a corrected plan, a second read phase) neither reads nor
	// parses them again. Nil reads every file afresh.
	Cache *FileCache
}

// Read is one kind to read from the cluster. Reads of the same kind are merged.
type Read struct {
	// Kind is one of Kinds() (KindDestinationRule, ...).
	Kind string
	// Namespaces to list the kind in; nil means all namespaces, an empty list none. For
	// KindNamespace, the names of the Namespace objects to get (nil lists them all).
	Namespaces []string
	// Names, for a kind that can be read by name in a namespace (KindPod, KindService), are
	// the objects to get in each of Namespaces instead of listing them: `authz pod/NAME` needs
	// one pod, not its namespace's, and `cluster HOST` the host's Service. A namespace another
	// Read of the kind lists is listed.
	Names []string
	// Labeled reads only the objects that carry this label (a list with the label selector
	// KEY): in every namespace with Namespaces nil (`authz waypoint/NAME` needs the Services of
	// other namespaces only when their istio.io/use-waypoint label may name it), else in each
	// of Namespaces (`authz pod/NAME` needs of its namespace's pods only the waypoints', which
	// carry gateway.networking.k8s.io/gateway-name). A namespace another Read of the kind
	// lists is read whole.
	Labeled string
}

// Load reads the objects and the MeshConfig the engines need. Problems with single objects or
// denied reads become Snapshot.Issues (and Snapshot.Incomplete); Load fails only when nothing
// useful can be read: a path that does not exist, an invalid --meshconfig file, a cluster that
// cannot be reached or refuses the credentials (a *ClusterError, worded as kubectl words it), or
// a cluster without Istio's CRDs. With Files and without Overlay, the cluster is never contacted.
func Load(ctx context.Context, s Spec) (*model.Snapshot, error) {
	var c *clients
	if s.Getter != nil && (len(s.Files) == 0 || s.Overlay) {
		var err error
		if c, err = newClients(s.Getter); err != nil {
			return nil, err
		}
	}
	return load(ctx, s, c)
}

// Progress is how far a live load has got: reads (lists and gets) done of those planned, and
// the objects they returned.
type Progress struct {
	Done, Total, Objects int
}

// LoadFiles loads files or directories offline, with defaultNamespace for objects without
// one. It is Load for tests and tools that have no cluster.
func LoadFiles(paths []string, defaultNamespace string) (*model.Snapshot, error) {
	return Load(context.Background(), Spec{Files: paths, DefaultNamespace: defaultNamespace})
}

// load is Load with the cluster clients given (nil: files only), so tests can pass fakes.
func load(ctx context.Context, s Spec, c *clients) (*model.Snapshot, error) {
	if s.IstioNamespace == "" {
		s.IstioNamespace = DefaultIstioNamespace
	}
	if s.DefaultNamespace == "" {
		s.DefaultNamespace = "default"
	}
	live := c != nil && (len(s.Files) == 0 || s.Overlay)
	switch {
	case s.Overlay && len(s.Files) == 0:
		return nil, errors.New("--overlay lays files over the cluster, but no file was given (pass -f FILE|DIR|-)")
	case s.Overlay && c == nil:
		return nil, errors.New("--overlay lays files over the cluster, but no cluster is configured")
	case !live && len(s.Files) == 0:
		return nil, errors.New("nothing to load (pass -f FILE|DIR|- or use a cluster)")
	}
	l := newLoader(s)
	if live {
		c.ruleInFull, c.vsNeeded = s.DestinationRuleInFull, s.VirtualServiceNeeded
		if err := l.readLive(ctx, c); err != nil {
			return nil, err
		}
	}
	if len(s.Files) > 0 {
		first := len(l.issues)
		if err := l.readFiles(); err != nil {
			return nil, err
		}
		if s.Overlay {
			l.liveStandsIn(l.issues[first:])
		}
	}
	if err := l.resolveMesh(); err != nil {
		return nil, err
	}
	return l.snapshot(), nil
}

// liveStandsIn warns, for each file object of an overlay skipped as malformed whose live
// object is still in the snapshot, that the what-if for it could not be applied: the answer is
// the live object's.
func (l *loader) liveStandsIn(fileIssues []model.LoadIssue) {
	said := map[model.ObjectKey]bool{}
	for _, is := range fileIssues {
		if is.Severity != "error" || is.Resource == nil {
			continue
		}
		key := model.ObjectKey{Kind: is.Resource.Kind, Namespace: is.Resource.Namespace, Name: is.Resource.Name}
		if _, live := l.objs[key]; !live || l.fromFile[key] || said[key] {
			continue
		}
		said[key] = true
		ref := *is.Resource
		l.issue(model.LoadIssue{
			Severity: "warning", Resource: &ref, Position: is.Position,
			Message: "the what-if for this object could not be applied: its file definition is skipped, so the live object is used",
		})
	}
}

// loader accumulates objects, their sources and the load issues.
type loader struct {
	spec Spec
	cwd  string

	objs     map[model.ObjectKey]object
	sources  map[model.ObjectKey]model.Source
	fromFile map[model.ObjectKey]bool
	loc      *locator

	issues     []model.LoadIssue
	incomplete map[string]string
	absent     map[string]string

	fileMesh *meshInput
	liveMesh *meshInput
	mesh     appliedMesh

	// plan is Reads by kind, for FilterFiles.
	plan map[string]readScope
}

// readScope is what Reads read of one kind: every namespace, or the listed ones (for
// KindNamespace, the listed names), and the objects got by name in other namespaces.
type readScope struct {
	all        bool
	namespaces map[string]bool
	// names are the names read in a namespace that is not listed, by namespace.
	names map[string]map[string]bool
	// labeled are the labels whose objects are read in every namespace (Read.Labeled).
	labeled []string
	// nsLabeled are the labels whose objects are read in a namespace that is not listed, by
	// namespace (Read.Labeled with Namespaces).
	nsLabeled map[string][]string
}

// readScopes merges Reads by kind, as planReads does.
func readScopes(reads []Read) map[string]readScope {
	out := map[string]readScope{}
	for _, r := range reads {
		sc, ok := out[r.Kind]
		if !ok {
			sc.namespaces = map[string]bool{}
		}
		switch {
		case r.Namespaces == nil && r.Labeled != "":
			if !slices.Contains(sc.labeled, r.Labeled) {
				sc.labeled = append(sc.labeled, r.Labeled)
			}
		case r.Namespaces == nil:
			sc.all = true
		case r.Labeled != "":
			for _, ns := range r.Namespaces {
				if ns != "" && !slices.Contains(sc.nsLabeled[ns], r.Labeled) {
					if sc.nsLabeled == nil {
						sc.nsLabeled = map[string][]string{}
					}
					sc.nsLabeled[ns] = append(sc.nsLabeled[ns], r.Labeled)
				}
			}
		case r.Names != nil:
			for _, ns := range r.Namespaces {
				for _, name := range r.Names {
					if ns != "" && name != "" {
						if sc.names == nil {
							sc.names = map[string]map[string]bool{}
						}
						if sc.names[ns] == nil {
							sc.names[ns] = map[string]bool{}
						}
						sc.names[ns][name] = true
					}
				}
			}
		default:
			for _, ns := range r.Namespaces {
				if ns != "" {
					sc.namespaces[ns] = true
				}
			}
		}
		out[r.Kind] = sc
	}
	return out
}

// planned reports whether Reads would read the object from a cluster.
func (l *loader) planned(ki *kindInfo, ns, name string) bool {
	sc, ok := l.plan[ki.kind]
	switch {
	case !ok:
		return false
	case sc.all && ki.list != nil:
		// A kind read only by name (Node) is never read in all namespaces: only its names count.
		return true
	case ki.cluster:
		return sc.namespaces[name]
	}
	// An object of a labelled read is kept until its labels are known (labelledOnly).
	labelled := len(sc.labeled) > 0 || len(sc.nsLabeled[ns]) > 0
	return sc.namespaces[ns] || sc.names[ns][name] || (!sc.all && labelled && ki.list != nil)
}

// labelledOnly returns the labels of which the object must carry one to be read, when Reads
// would read it only by a labelled read (Read.Labeled); nil when they read it whatever its
// labels.
func (l *loader) labelledOnly(ki *kindInfo, ns, name string) []string {
	sc, ok := l.plan[ki.kind]
	if !ok || sc.all || ki.cluster || sc.namespaces[ns] || sc.names[ns][name] {
		return nil
	}
	if len(sc.nsLabeled[ns]) == 0 {
		return sc.labeled
	}
	return append(slices.Clip(sc.labeled), sc.nsLabeled[ns]...)
}

// appliedMesh is the effective mesh config and where it came from.
type appliedMesh struct {
	mc   *meshv1alpha1.MeshConfig
	user map[string]bool
	ref  *provenance.Ref
	pos  *provenance.Position
}

// meshInput is a mesh ConfigMap that was found.
type meshInput struct {
	yaml string
	// hasKey is false when the ConfigMap has no `mesh` key (istiod then uses its defaults).
	hasKey bool
	ref    provenance.Ref
	pos    *provenance.Position
}

func newLoader(s Spec) *loader {
	cwd, _ := os.Getwd()
	return &loader{
		spec:       s,
		cwd:        cwd,
		objs:       map[model.ObjectKey]object{},
		sources:    map[model.ObjectKey]model.Source{},
		fromFile:   map[model.ObjectKey]bool{},
		loc:        &locator{objs: map[model.ObjectKey]located{}},
		incomplete: map[string]string{},
		absent:     map[string]string{},
		plan:       readScopes(s.Reads),
	}
}

func (l *loader) issue(i model.LoadIssue) { l.issues = append(l.issues, i) }

// displayPath spells a file path for positions: relative to the working directory with forward
// slashes when the file lies below it, absolute otherwise.
func (l *loader) displayPath(p string) string {
	abs, err := filepath.Abs(p)
	if err != nil {
		return filepath.ToSlash(p)
	}
	if l.cwd != "" {
		if rel, err := filepath.Rel(l.cwd, abs); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return filepath.ToSlash(rel)
		}
	}
	return filepath.ToSlash(abs)
}

// resolveMesh picks the mesh config: --meshconfig, else a mesh ConfigMap from the files, else
// the live one, else istiod's defaults.
func (l *loader) resolveMesh() error {
	if f := l.spec.MeshConfigFile; f != "" {
		data, err := ReadInput(f, l.spec.maxInputBytes())
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("the mesh config file %q does not exist", f)
			}
			return fmt.Errorf("reading mesh config %s: %w", f, err)
		}
		name := l.displayPath(f)
		mc, user, unknown, err := parseMeshConfig(string(data))
		if err != nil {
			return fmt.Errorf("invalid mesh config %s: %v", name, err)
		}
		ref := provenance.Ref{Kind: "MeshConfig", Name: name}
		pos := &provenance.Position{File: name, Line: 1, Col: 1}
		l.meshUnknownFields(ref, pos, "", unknown)
		l.mesh = appliedMesh{mc: mc, user: user, ref: &ref, pos: pos}
		return nil
	}
	in := l.fileMesh
	if in == nil {
		in = l.liveMesh
	}
	l.mesh = appliedMesh{mc: DefaultMeshConfig(), user: map[string]bool{}}
	if in == nil || !in.hasKey {
		return nil
	}
	mc, user, unknown, err := parseMeshConfig(in.yaml)
	ref := in.ref
	if err != nil {
		l.issue(model.LoadIssue{
			Severity: "error", Resource: &ref, Position: in.pos, Field: "data." + MeshConfigKey,
			Message: fmt.Sprintf("invalid mesh config, istiod ignores it and uses its defaults: %v", err),
		})
		return nil
	}
	l.meshUnknownFields(ref, in.pos, "data."+MeshConfigKey, unknown)
	l.mesh = appliedMesh{mc: mc, user: user, ref: &ref, pos: in.pos}
	return nil
}

func (l *loader) meshUnknownFields(ref provenance.Ref, pos *provenance.Position, field string, unknown []fieldError) {
	for _, u := range unknown {
		l.issue(model.LoadIssue{
			Severity: "warning", Resource: &ref, Position: pos, Field: field,
			Message: fmt.Sprintf("mesh config %s: %s; istiod ignores it", u.Path, u.Message),
		})
	}
}

// snapshot builds the sorted Snapshot.
func (l *loader) snapshot() *model.Snapshot {
	snap := &model.Snapshot{
		MeshConfig:           l.mesh.mc,
		MeshConfigSource:     l.mesh.ref,
		MeshConfigPosition:   l.mesh.pos,
		MeshConfigUserFields: l.mesh.user,
		Sources:              l.sources,
		Issues:               l.issues,
		Incomplete:           l.incomplete,
		IstioNamespace:       l.spec.IstioNamespace,
	}
	if len(l.absent) > 0 {
		snap.Absent = l.absent
	}
	for _, o := range l.objs {
		addToSnapshot(snap, o)
	}
	if len(l.loc.objs) > 0 {
		snap.Fields = l.loc
	}
	snap.Sort()
	return snap
}
