package cli

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	networkingapi "istio.io/api/networking/v1alpha3"
	networkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/engine/envoycluster"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/engine/ztunnelauthz"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/explain"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/model"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/source"
)

// readsByKind turns a plan into kind → namespaces ("*" for all namespaces), and the names got
// in them after a colon, or the label of a labelled read after a tilde.
func readsByKind(reads []source.Read) map[string]string {
	out := map[string]string{}
	for _, r := range reads {
		var s string
		switch {
		case r.Labeled != "" && r.Namespaces == nil:
			s = "*~" + r.Labeled
		case r.Labeled != "":
			s = strings.Join(r.Namespaces, ",") + "~" + r.Labeled
		case r.Namespaces == nil:
			s = "*"
		case r.Names != nil:
			s = strings.Join(r.Namespaces, ",") + ":" + strings.Join(r.Names, ",")
		default:
			s = strings.Join(r.Namespaces, ",")
		}
		if prev, ok := out[r.Kind]; ok {
			s = prev + "+" + s
		}
		out[r.Kind] = s
	}
	return out
}

func TestClusterReadPlan(t *testing.T) {
	tests := []struct {
		name  string
		args  []string
		snaps []*model.Snapshot
		// want is the plan of each load, in order.
		want []map[string]string
		// wantQuery is the engine query.
		wantQuery envoycluster.Query
	}{
		{
			name: "short name: client, service and root namespace for DestinationRules, the rest where it lives",
			args: []string{"cluster", "reviews", "-n", "bookinfo", "--from", "pod/productpage-v1"},
			want: []map[string]string{{
				"DestinationRule": "bookinfo,istio-system", "Sidecar": "bookinfo,istio-system",
				"PeerAuthentication": "bookinfo,istio-system", "EnvoyFilter": "bookinfo,istio-system",
				"Namespace": "bookinfo,istio-system", "Service": "bookinfo", "Pod": "bookinfo",
				"ServiceEntry": "*", "WorkloadEntry": "*", "VirtualService": "*",
			}},
			wantQuery: envoycluster.Query{Host: "reviews", Namespace: "bookinfo",
				From: envoycluster.ProxyRef{Kind: envoycluster.ProxyPod, Namespace: "bookinfo", Name: "productpage-v1"}},
		},
		{
			name: "FQDN names the service namespace; the client pod's namespace is read too",
			args: []string{"cluster", "reviews.bookinfo.svc.cluster.local:9080", "-n", "frontend", "--from", "pod/productpage-v1", "--subset", "v1"},
			want: []map[string]string{{
				"DestinationRule": "bookinfo,frontend,istio-system", "Sidecar": "bookinfo,frontend,istio-system",
				"PeerAuthentication": "bookinfo,frontend,istio-system", "EnvoyFilter": "frontend,istio-system",
				"Namespace": "bookinfo,frontend,istio-system", "Service": "bookinfo:reviews+frontend", "Pod": "bookinfo,frontend",
				"ServiceEntry": "*", "WorkloadEntry": "*", "VirtualService": "*",
			}},
			wantQuery: envoycluster.Query{Host: "reviews.bookinfo.svc.cluster.local", Namespace: "frontend", Port: 9080, Subset: "v1",
				From: envoycluster.ProxyRef{Kind: envoycluster.ProxyPod, Namespace: "frontend", Name: "productpage-v1"}},
		},
		{
			name: "name.namespace and --from namespace: no pod is read for the client",
			args: []string{"cluster", "reviews.bookinfo", "-n", "default", "--from", "namespace/frontend", "--port", "9080"},
			want: []map[string]string{{
				"DestinationRule": "bookinfo,frontend,istio-system", "Sidecar": "bookinfo,frontend,istio-system",
				"PeerAuthentication": "bookinfo,frontend,istio-system", "EnvoyFilter": "frontend,istio-system",
				"Namespace": "bookinfo,frontend,istio-system", "Service": "bookinfo:reviews", "Pod": "bookinfo",
				"ServiceEntry": "*", "WorkloadEntry": "*", "VirtualService": "*",
			}},
			wantQuery: envoycluster.Query{Host: "reviews.bookinfo", Namespace: "default", Port: 9080,
				From: envoycluster.ProxyRef{Kind: envoycluster.ProxyNamespace, Namespace: "frontend"}},
		},
		{
			name: "-A: DestinationRules in every namespace, the rest as without it",
			args: []string{"cluster", "reviews", "-n", "bookinfo", "--from", "pod/productpage-v1", "-A"},
			want: []map[string]string{{
				"DestinationRule": "*", "Sidecar": "bookinfo,istio-system",
				"PeerAuthentication": "bookinfo,istio-system", "EnvoyFilter": "bookinfo,istio-system",
				"Namespace": "bookinfo,istio-system", "Service": "bookinfo", "Pod": "bookinfo",
				"ServiceEntry": "*", "WorkloadEntry": "*", "VirtualService": "*",
			}},
			wantQuery: envoycluster.Query{Host: "reviews", Namespace: "bookinfo",
				From: envoycluster.ProxyRef{Kind: envoycluster.ProxyPod, Namespace: "bookinfo", Name: "productpage-v1"}},
		},
		{
			name:  "MeshConfig names another root namespace: read again there",
			args:  []string{"cluster", "reviews", "-n", "bookinfo"},
			snaps: []*model.Snapshot{meshWithRoot("mesh-root")},
			want: []map[string]string{
				{"DestinationRule": "bookinfo,istio-system", "Sidecar": "bookinfo,istio-system", "PeerAuthentication": "bookinfo,istio-system",
					"EnvoyFilter": "bookinfo,istio-system", "Namespace": "bookinfo,istio-system", "Service": "bookinfo:reviews", "Pod": "bookinfo",
					"ServiceEntry": "*", "WorkloadEntry": "*", "VirtualService": "*"},
				// istiod's namespace stays read: its network label is the pods' network.
				{"DestinationRule": "bookinfo,mesh-root", "Sidecar": "bookinfo,mesh-root", "PeerAuthentication": "bookinfo,mesh-root",
					"EnvoyFilter": "bookinfo,mesh-root", "Namespace": "bookinfo,istio-system,mesh-root", "Service": "bookinfo:reviews", "Pod": "bookinfo",
					"ServiceEntry": "*", "WorkloadEntry": "*", "VirtualService": "*"},
			},
			wantQuery: envoycluster.Query{Host: "reviews", Namespace: "bookinfo", From: envoycluster.ProxyRef{Namespace: "bookinfo"}},
		},
		{
			name:  "--istio-namespace is the first guess of the root namespace",
			args:  []string{"cluster", "reviews", "-n", "bookinfo", "--istio-namespace", "istio-control"},
			snaps: []*model.Snapshot{{MeshConfig: nil}},
			want: []map[string]string{
				{"DestinationRule": "bookinfo,istio-control", "Sidecar": "bookinfo,istio-control", "PeerAuthentication": "bookinfo,istio-control",
					"EnvoyFilter": "bookinfo,istio-control", "Namespace": "bookinfo,istio-control", "Service": "bookinfo:reviews", "Pod": "bookinfo",
					"ServiceEntry": "*", "WorkloadEntry": "*", "VirtualService": "*"},
				// The snapshot says the root is istio-system (the MeshConfig default); istiod's
				// namespace stays read.
				{"DestinationRule": "bookinfo,istio-system", "Sidecar": "bookinfo,istio-system", "PeerAuthentication": "bookinfo,istio-system",
					"EnvoyFilter": "bookinfo,istio-system", "Namespace": "bookinfo,istio-control,istio-system", "Service": "bookinfo:reviews", "Pod": "bookinfo",
					"ServiceEntry": "*", "WorkloadEntry": "*", "VirtualService": "*"},
			},
			wantQuery: envoycluster.Query{Host: "reviews", Namespace: "bookinfo", From: envoycluster.ProxyRef{Namespace: "bookinfo"}},
		},
		{
			name: "ServiceEntry host: the ServiceEntry's namespace becomes the service namespace",
			args: []string{"cluster", "api.example.com", "-n", "default"},
			snaps: []*model.Snapshot{{ServiceEntries: []*networkingv1.ServiceEntry{{
				ObjectMeta: metav1.ObjectMeta{Name: "api", Namespace: "egress"},
				Spec:       networkingapi.ServiceEntry{Hosts: []string{"*.example.com"}},
			}}}},
			want: []map[string]string{
				{"DestinationRule": "default,istio-system", "Sidecar": "default,istio-system", "PeerAuthentication": "default,istio-system",
					"EnvoyFilter": "default,istio-system", "Namespace": "default,istio-system", "Service": "", "Pod": "",
					"ServiceEntry": "*", "WorkloadEntry": "*", "VirtualService": "*"},
				{"DestinationRule": "default,egress,istio-system", "Sidecar": "default,egress,istio-system", "PeerAuthentication": "default,egress,istio-system",
					"EnvoyFilter": "default,istio-system", "Namespace": "default,egress,istio-system", "Service": "egress", "Pod": "egress",
					"ServiceEntry": "*", "WorkloadEntry": "*", "VirtualService": "*"},
			},
			wantQuery: envoycluster.Query{Host: "api.example.com", Namespace: "default", From: envoycluster.ProxyRef{Namespace: "default"}},
		},
	}
	for _, tt := range tests {
		// Files are filtered by the same plan, corrected the same way, so the same command line
		// gives the same answer from files as from a cluster.
		for _, mode := range []inputMode{live, filesOnly, overlay} {
			t.Run(tt.name+"/"+mode.name, func(t *testing.T) {
				f := &fakes{snaps: tt.snaps}
				r := runWith(t, f, append(slices.Clone(tt.args), mode.args...)...)
				if r.code != ExitOK {
					t.Fatalf("run failed:\n%s", r)
				}
				got := checkSpecs(t, f.specs, mode)
				if !reflect.DeepEqual(got, tt.want) {
					t.Errorf("reads =\n%v\nwant\n%v", got, tt.want)
				}
				if len(f.queries) != 1 || !reflect.DeepEqual(f.queries[0], tt.wantQuery) {
					t.Errorf("queries = %+v, want [%+v]", f.queries, tt.wantQuery)
				}
			})
		}
	}
}

// inputMode is where a command reads from: the cluster, files only, or files over the cluster.
type inputMode struct {
	name string
	args []string
	// getter: the cluster is read.
	getter bool
}

var (
	live      = inputMode{name: "live", getter: true}
	filesOnly = inputMode{name: "files", args: []string{"-f", "x.yaml"}}
	overlay   = inputMode{name: "overlay", args: []string{"-f", "x.yaml", "--overlay"}, getter: true}
)

// checkSpecs checks that every load of a run reads from where mode says and filters its files
// by the planned reads, and returns the plan of each load.
func checkSpecs(t *testing.T, specs []source.Spec, mode inputMode) []map[string]string {
	t.Helper()
	var out []map[string]string
	for _, s := range specs {
		if (s.Getter != nil) != mode.getter {
			t.Fatalf("%s: getter %v, want a getter: %v", mode.name, s.Getter, mode.getter)
		}
		if !s.FilterFiles {
			t.Fatalf("%s: the files are not filtered by the planned reads", mode.name)
		}
		out = append(out, readsByKind(s.Reads))
	}
	return out
}

func TestClusterNotFoundRereadsEveryService(t *testing.T) {
	for _, mode := range []inputMode{live, filesOnly} {
		t.Run(mode.name, func(t *testing.T) {
			f := &fakes{clusterErrs: []error{
				&explain.NotFoundError{What: `host "reviewz"`},
				&explain.NotFoundError{What: `host "reviewz"`, Hint: "did you mean reviews.bookinfo.svc.cluster.local?"},
			}}
			r := runWith(t, f, append([]string{"cluster", "reviewz", "-n", "bookinfo"}, mode.args...)...)
			if r.code != ExitError {
				t.Fatalf("exit code %d, want %d:\n%s", r.code, ExitError, r)
			}
			checkSpecs(t, f.specs, mode)
			if len(f.specs) != 2 || readsByKind(f.specs[0].Reads)["Service"] != "bookinfo:reviewz" || readsByKind(f.specs[1].Reads)["Service"] != "*" {
				t.Fatalf("want a minimal read, then every Service; got %d loads: %+v", len(f.specs), f.specs)
			}
			if want := "error: host \"reviewz\" not found (did you mean reviews.bookinfo.svc.cluster.local?)\n"; r.stderr != want {
				t.Errorf("stderr = %q, want %q", r.stderr, want)
			}
			if r.stdout != "" {
				t.Errorf("stdout = %q, want nothing", r.stdout)
			}
		})
	}
}

func TestFilesOnlyReadsNoCluster(t *testing.T) {
	for _, args := range [][]string{
		{"cluster", "reviews", "-f", "x.yaml"},
		{"authz", "pod/a", "-f", "x.yaml"},
	} {
		f := &fakes{authzResults: []*explain.Result{{Subject: explain.Subject{Kind: "Workload"}}}}
		r := runWith(t, f, append(args, "--kubeconfig", "/nonexistent/kubeconfig")...)
		if r.code != ExitOK {
			t.Fatalf("%v: %s", args, r)
		}
		if len(f.specs) != 1 || f.specs[0].Getter != nil {
			t.Fatalf("%v: files-only load has a getter: %+v", args, f.specs)
		}
		// The reads are planned all the same: they filter the file objects.
		if !f.specs[0].FilterFiles || len(f.specs[0].Reads) == 0 {
			t.Fatalf("%v: files-only load is not filtered by a plan: %+v", args, f.specs[0])
		}
		if got := f.specs[0].DefaultNamespace; got != "default" {
			t.Errorf("%v: default namespace %q, want default (the kubeconfig is not read)", args, got)
		}
	}
}

func TestOverlayReadsTheClusterToo(t *testing.T) {
	f := &fakes{}
	r := runWith(t, f, "cluster", "reviews", "-n", "bookinfo", "-f", "dr.yaml", "--overlay")
	if r.code != ExitOK {
		t.Fatal(r)
	}
	if len(f.specs) != 1 || f.specs[0].Getter == nil || !f.specs[0].Overlay || len(f.specs[0].Reads) == 0 ||
		!reflect.DeepEqual(f.specs[0].Files, []string{"dr.yaml"}) {
		t.Fatalf("overlay spec = %+v", f.specs)
	}
}

func TestAuthzReadPlan(t *testing.T) {
	tests := []struct {
		name      string
		args      []string
		snaps     []*model.Snapshot
		want      []map[string]string
		wantQuery ztunnelauthz.Query
	}{
		{
			name: "pod: its namespace and the root namespace, the pod by name",
			args: []string{"authz", "pod/a", "-n", "foo"},
			want: []map[string]string{{"Namespace": "foo,istio-system", "Pod": "foo:a+foo~gateway.networking.k8s.io/gateway-name", "PeerAuthentication": "foo,istio-system",
				"AuthorizationPolicy": "foo,istio-system", "RequestAuthentication": "foo,istio-system", "Service": "foo", "Gateway": "foo"}},
			wantQuery: ztunnelauthz.Query{Namespace: "foo", Workload: ztunnelauthz.WorkloadRef{Kind: "pod", Name: "a"}},
		},
		{
			name: "deployment: deployments are read too",
			args: []string{"authz", "deploy/web", "-n", "foo"},
			want: []map[string]string{{"Namespace": "foo,istio-system", "Pod": "foo", "PeerAuthentication": "foo,istio-system",
				"AuthorizationPolicy": "foo,istio-system", "RequestAuthentication": "foo,istio-system", "Service": "foo", "Gateway": "foo", "Deployment": "foo"}},
			wantQuery: ztunnelauthz.Query{Namespace: "foo", Workload: ztunnelauthz.WorkloadRef{Kind: "deployment", Name: "web"}},
		},
		{
			name:  "selector, with a root namespace MeshConfig moves",
			args:  []string{"authz", "-l", "app=a", "-n", "foo"},
			snaps: []*model.Snapshot{meshWithRoot("mesh-root")},
			want: []map[string]string{
				{"Namespace": "foo,istio-system", "Pod": "foo", "PeerAuthentication": "foo,istio-system",
					"AuthorizationPolicy": "foo,istio-system", "RequestAuthentication": "foo,istio-system", "Service": "foo", "Gateway": "foo"},
				{"Namespace": "foo,mesh-root", "Pod": "foo", "PeerAuthentication": "foo,mesh-root",
					"AuthorizationPolicy": "foo,mesh-root", "RequestAuthentication": "foo,mesh-root", "Service": "foo", "Gateway": "foo"},
			},
			wantQuery: ztunnelauthz.Query{Namespace: "foo", Selector: "app=a"},
		},
	}
	for _, tt := range tests {
		for _, mode := range []inputMode{live, filesOnly, overlay} {
			t.Run(tt.name+"/"+mode.name, func(t *testing.T) {
				f := &fakes{snaps: tt.snaps, authzResults: []*explain.Result{{Subject: explain.Subject{Kind: "Workload"}}}}
				r := runWith(t, f, append(slices.Clone(tt.args), mode.args...)...)
				if r.code != ExitOK {
					t.Fatalf("run failed:\n%s", r)
				}
				got := checkSpecs(t, f.specs, mode)
				if !reflect.DeepEqual(got, tt.want) {
					t.Errorf("reads =\n%v\nwant\n%v", got, tt.want)
				}
				if len(f.authzQueries) != 1 || !reflect.DeepEqual(f.authzQueries[0], tt.wantQuery) {
					t.Errorf("queries = %+v, want [%+v]", f.authzQueries, tt.wantQuery)
				}
			})
		}
	}
}

func TestAuthzPodNotFoundListsItsNamespace(t *testing.T) {
	for _, mode := range []inputMode{live, filesOnly} {
		t.Run(mode.name, func(t *testing.T) {
			f := &fakes{authzErrs: []error{
				&explain.NotFoundError{What: "pod foo/ab"},
				&explain.NotFoundError{What: "pod foo/ab", Hint: "pods in foo: a, b"},
			}}
			r := runWith(t, f, append([]string{"authz", "pod/ab", "-n", "foo"}, mode.args...)...)
			if r.code != ExitError {
				t.Fatalf("exit code %d, want %d:\n%s", r.code, ExitError, r)
			}
			checkSpecs(t, f.specs, mode)
			if len(f.specs) != 2 || readsByKind(f.specs[0].Reads)["Pod"] != "foo:ab+foo~gateway.networking.k8s.io/gateway-name" || readsByKind(f.specs[1].Reads)["Pod"] != "foo" {
				t.Fatalf("want the pod by name, then the pods of its namespace; got %d loads: %+v", len(f.specs), f.specs)
			}
			if want := "error: pod foo/ab not found (pods in foo: a, b)\n"; r.stderr != want {
				t.Errorf("stderr = %q, want %q", r.stderr, want)
			}
		})
	}

	// A selector lists the namespace from the start, and is not read again.
	f := &fakes{authzErrs: []error{&explain.NotFoundError{What: `pods matching "app=x" in namespace foo`}}}
	r := runWith(t, f, "authz", "-l", "app=x", "-n", "foo", "-f", "x.yaml")
	if r.code != ExitError || len(f.specs) != 1 || readsByKind(f.specs[0].Reads)["Pod"] != "foo" {
		t.Errorf("selector not found: %d loads %+v, %s", len(f.specs), f.specs, r)
	}
}

func TestLoadErrorIsReported(t *testing.T) {
	f := &fakes{loadErr: errors.New("the connection to the server 127.0.0.1:1 was refused - did you specify the right host or port?")}
	r := runWith(t, f, "cluster", "reviews", "-n", "bookinfo")
	if r.code != ExitError || r.stderr != "error: the connection to the server 127.0.0.1:1 was refused - did you specify the right host or port?\n" {
		t.Fatalf("got %s", r)
	}
}
