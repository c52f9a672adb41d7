// Command istio-output prints what Istio's own control-plane code produces for scenario
// folders: the `-o envoy` clusters of a cluster scenario, the `-o ztunnel` Authorizations of
// an authz scenario, the `-o envoy` inbound filter chains of a sidecar scenario, the `-o envoy`
// main_internal filter chains of a waypoint scenario. The kind is the name of the folder's
// parent (cluster, authz, sidecar, waypoint), else -kind, else the command's verb. With -w it
// writes the folder's want file instead.
//
//	go run ./cmd/istio-output [-w] [-kind sidecar] DIR...
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/mesh-explain/kubectl-mesh-explain/conformance/istiorun"
)

func main() {
	write := flag.Bool("w", false, "write want.envoy.json / want.ztunnel.yaml into each folder")
	kindFlag := flag.String("kind", "", "scenario kind (cluster, authz, sidecar, waypoint) for folders whose parent does not name one")
	flag.Parse()
	rc := 0
	for _, dir := range flag.Args() {
		sc, err := istiorun.LoadScenario(dir)
		if err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", dir, err)
			rc = 1
			continue
		}
		kind := istiorun.KindOf(dir)
		if kind == "" {
			kind = *kindFlag
		}
		if kind == "" {
			kind = sc.Args.Verb
		}
		out, want, err := istiorun.RunKind(sc, kind)
		if err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", dir, err)
			rc = 1
			continue
		}
		if *write {
			if err := os.WriteFile(filepath.Join(dir, want), out, 0o644); err != nil {
				fmt.Fprintln(os.Stderr, err)
				rc = 1
			}
			continue
		}
		os.Stdout.Write(out)
	}
	os.Exit(rc)
}
