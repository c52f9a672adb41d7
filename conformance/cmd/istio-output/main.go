// Command istio-output prints what Istio's own control-plane code produces for scenario
// folders: the `-o envoy` clusters of a cluster scenario, the `-o ztunnel` Authorizations of
// an authz scenario. With -w it writes the folder's want file instead.
//
//	go run ./cmd/istio-output [-w] DIR...
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
	flag.Parse()
	rc := 0
	for _, dir := range flag.Args() {
		sc, err := istiorun.LoadScenario(dir)
		if err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", dir, err)
			rc = 1
			continue
		}
		out, want, err := istiorun.Run(sc)
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
