package cli

import (
	"context"
	"strconv"
	"testing"

	"github.com/spf13/cobra"
	meshv1alpha1 "istio.io/api/mesh/v1alpha1"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/engine/envoycluster"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/engine/waypointauthz"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/engine/ztunnelauthz"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/explain"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/model"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/source"
)

// fakes replaces the source and the engines of a command tree and records what they saw.
type fakes struct {
	// snaps are returned by successive loads (the last one repeats).
	snaps   []*model.Snapshot
	loadErr error
	specs   []source.Spec

	// clusterResults / clusterErrs are returned by successive cluster explains.
	clusterResults []*explain.Result
	clusterErrs    []error
	queries        []envoycluster.Query

	authzResults []*explain.Result
	authzErr     error
	// authzErrs, when set, are returned by successive authz explains instead of authzErr.
	authzErrs    []error
	authzQueries []ztunnelauthz.Query

	// istiods / istiodErr are what listing the istiod Deployments returns; istiodLists
	// counts the lists.
	istiods     []Istiod
	istiodErr   error
	istiodLists int
	// istiodPanic, when set, is what listing the istiods panics with.
	istiodPanic any
}

func (f *fakes) listIstiods(context.Context, string) ([]Istiod, error) {
	f.istiodLists++
	if f.istiodPanic != nil {
		panic(f.istiodPanic)
	}
	return f.istiods, f.istiodErr
}

func (f *fakes) load(_ context.Context, s source.Spec) (*model.Snapshot, error) {
	f.specs = append(f.specs, s)
	if f.loadErr != nil {
		return nil, f.loadErr
	}
	if len(f.snaps) == 0 {
		return &model.Snapshot{}, nil
	}
	i := min(len(f.specs)-1, len(f.snaps)-1)
	return f.snaps[i], nil
}

func (f *fakes) explainCluster(_ *model.Snapshot, q envoycluster.Query) (*explain.Result, error) {
	f.queries = append(f.queries, q)
	i := len(f.queries) - 1
	var res *explain.Result
	var err error
	if i < len(f.clusterResults) {
		res = f.clusterResults[i]
	} else if len(f.clusterResults) > 0 {
		res = f.clusterResults[len(f.clusterResults)-1]
	}
	if i < len(f.clusterErrs) {
		err = f.clusterErrs[i]
	}
	if res == nil && err == nil {
		res = &explain.Result{APIVersion: explain.APIVersion, Kind: explain.KindClusterExplanation,
			Subject: explain.Subject{Kind: "Host", Host: q.Host}}
	}
	return res, err
}

func (f *fakes) explainAuthz(_ *model.Snapshot, q ztunnelauthz.Query) ([]*explain.Result, error) {
	f.authzQueries = append(f.authzQueries, q)
	if i := len(f.authzQueries) - 1; f.authzErrs != nil {
		if i < len(f.authzErrs) && f.authzErrs[i] != nil {
			return nil, f.authzErrs[i]
		}
		return f.authzResults, nil
	}
	return f.authzResults, f.authzErr
}

// explainWaypoint answers waypoint/NAME with the first authz result, as a waypoint.
func (f *fakes) explainWaypoint(_ *model.Snapshot, q waypointauthz.Query) (*explain.Result, error) {
	f.authzQueries = append(f.authzQueries, ztunnelauthz.Query{Namespace: q.Namespace})
	if f.authzErr != nil {
		return nil, f.authzErr
	}
	res := &explain.Result{APIVersion: explain.APIVersion, Kind: explain.KindAuthzExplanation,
		Subject: explain.Subject{Kind: "Waypoint", Namespace: q.Namespace, Workload: "waypoint/" + q.Name}}
	if len(f.authzResults) > 0 {
		r := *f.authzResults[0]
		r.Subject = res.Subject
		res = &r
	}
	return res, nil
}

func (f *fakes) root(streams genericiooptions.IOStreams) *cobra.Command {
	o := NewCommonOptions(streams)
	o.Getenv = func(string) string { return "" }
	o.ListIstiods = f.listIstiods
	return newRootCmd(o,
		func(ctx context.Context, co *ClusterOptions) error {
			co.Load, co.Explain = f.load, f.explainCluster
			return co.Run(ctx)
		},
		func(ctx context.Context, ao *AuthzOptions) error {
			ao.Load, ao.Explain, ao.ExplainWaypoint = f.load, f.explainAuthz, f.explainWaypoint
			return ao.Run(ctx)
		},
		func(ctx context.Context, co *CheckOptions) error {
			co.Load = f.load
			return co.Run(ctx)
		})
}

// result of one in-process run.
type result struct {
	code           int
	stdout, stderr string
}

// runWith runs the command line against the fakes.
func runWith(t *testing.T, f *fakes, args ...string) result {
	t.Helper()
	streams, _, out, errOut := genericiooptions.NewTestIOStreams()
	code := run(args, streams, f.root)
	return result{code: code, stdout: out.String(), stderr: errOut.String()}
}

// runMain runs the real Main in-process, with stdin.
func runMain(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	streams, in, out, errOut := genericiooptions.NewTestIOStreams()
	in.WriteString(stdin)
	code := Main(args, streams)
	return result{code: code, stdout: out.String(), stderr: errOut.String()}
}

func (r result) String() string {
	return "exit code " + strconv.Itoa(r.code) + "\n--- stdout\n" + r.stdout + "\n--- stderr\n" + r.stderr
}

// meshWithRoot is a snapshot whose MeshConfig sets rootNamespace.
func meshWithRoot(root string) *model.Snapshot {
	return &model.Snapshot{MeshConfig: &meshv1alpha1.MeshConfig{RootNamespace: root}}
}
